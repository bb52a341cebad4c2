"""JSON text exactly as `ringcast tail` (Go) writes it: encoding/json's
string escaping (HTML characters and U+2028/U+2029 escaped, no other
non-ASCII escaped), and a google.protobuf.Struct as protojson renders it
(keys sorted, numbers in the shortest form that reads back, exponent
notation below 1e-6 and from 1e21)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
            "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def string(s: str) -> str:
    out = ['"']
    for ch in s:
        e = _ESCAPES.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")  # a lone surrogate is not UTF-8: Go writes U+FFFD
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def number(n: float) -> str:
    """A float64 as protojson (and encoding/json) write it."""
    if math.isnan(n) or math.isinf(n):
        raise ValueError(f"{n} is not a JSON number")
    a = abs(n)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        r = repr(n)  # shortest digits; exponent form in this range
        mant, _, exp = r.partition("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        digits = exp.lstrip("+-").lstrip("0") or "0"
        if len(digits) < 2:
            digits = "0" + digits
        if sign == "-" and digits.startswith("0"):
            digits = digits[1:]  # Go writes e-7, but e+21 and e-10
        return f"{mant}e{sign}{digits}"
    s = format(Decimal(repr(n)), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def value(v: Any) -> str:
    """A Struct, ListValue or Value message as JSON text."""
    name = v.DESCRIPTOR.full_name
    if name == "google.protobuf.Struct":
        return "{" + ",".join(string(k) + ":" + value(v.fields[k]) for k in sorted(v.fields)) + "}"
    if name == "google.protobuf.ListValue":
        return "[" + ",".join(value(x) for x in v.values) + "]"
    which = v.WhichOneof("kind")
    if which == "struct_value":
        return value(v.struct_value)
    if which == "list_value":
        return value(v.list_value)
    if which == "number_value":
        return number(v.number_value)
    if which == "string_value":
        return string(v.string_value)
    if which == "bool_value":
        return "true" if v.bool_value else "false"
    return "null"


def obj(fields: list[tuple[str, str]]) -> str:
    """An object from (name, JSON text) pairs, in their order."""
    return "{" + ",".join(string(k) + ":" + t for k, t in fields) + "}"

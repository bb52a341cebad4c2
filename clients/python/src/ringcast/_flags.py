"""Command-line flags parsed as the Go CLI parses its own (Go's flag
package): -name or --name, -name=value or -name value (a bool flag takes
only -name or -name=value); flags may come before or after the positional
arguments, and "--" ends them; every flag not given falls back to its
environment variable RINGCAST_<NAME>."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class UsageError(Exception):
    """A bad command line: reported with the usage, exit status 2."""


class HelpRequested(Exception):
    """-h or --help: the usage, exit status 0."""


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


@dataclass
class Flag:
    name: str
    kind: str  # "string", "int", "uint", "bool", "list"
    default: Any
    usage: str
    value: Any = None

    def set(self, raw: str) -> None:
        if self.kind == "string":
            self.value = raw
        elif self.kind == "bool":
            if raw in _TRUE:
                self.value = True
            elif raw in _FALSE:
                self.value = False
            else:
                raise ValueError("true or false")
        elif self.kind in ("int", "uint"):
            try:
                n = int(raw, 0) if raw.strip() == raw and raw else None
            except ValueError:
                n = None
            if n is None:
                raise ValueError("an integer" if self.kind == "int" else "a whole number (0 or more)")
            if self.kind == "uint" and not 0 <= n < 1 << 64:
                raise ValueError("a whole number (0 or more)" + (" within range" if n >= 0 else ""))
            if self.kind == "int" and not -(1 << 63) <= n < 1 << 63:
                raise ValueError("an integer within range")
            self.value = n
        elif self.kind == "list":
            self.value = list(self.value or []) + [s.strip() for s in raw.split(",") if s.strip()]

    def env(self) -> str:
        return "RINGCAST_" + self.name.upper().replace("-", "_")


@dataclass
class FlagSet:
    command: str
    synopsis: str
    flags: dict[str, Flag] = field(default_factory=dict)

    def add(self, name: str, kind: str, default: Any, usage: str) -> None:
        self.flags[name] = Flag(name, kind, default, usage, list(default) if kind == "list" else default)

    def usage(self) -> str:
        lines = [f"Usage: ringcast {self.synopsis}", "",
                 'Flags may come before or after the arguments; "--" ends the flags (an',
                 'argument after it that starts with "-" is an argument). Every flag may',
                 "also be set as the environment variable shown with it (RINGCAST_<NAME>);",
                 "a flag on the command line wins.", "", "Flags:"]
        for f in sorted(self.flags.values(), key=lambda f: f.name):
            kind = {"int": " int", "uint": " uint", "string": " string", "list": " value", "bool": ""}[f.kind]
            lines.append(f"  --{f.name}{kind}  ({f.env()})")
            dflt = ""
            if f.kind == "string" and f.default:
                dflt = f' (default "{f.default}")'
            lines.append(f"      {f.usage}{dflt}")
        return "\n".join(lines) + "\n"

    def interspersed(self, args: list[str]) -> list[str]:
        """args with its flags moved before its positional arguments, and "--"
        between them, as the Go CLI arranges them before parsing: a flag's
        value is the next argument unless the flag is a bool or has
        "=value"; "--" ends the flags (what follows is positional, "-…"
        included), and a lone "-" is positional. An unknown flag stays a
        flag, for parse to refuse."""
        flags: list[str] = []
        pos: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                pos.extend(args[i + 1:])
                break
            if len(a) < 2 or a[0] != "-":
                pos.append(a)
                i += 1
                continue
            flags.append(a)
            name = a[1:].removeprefix("-")
            f = self.flags.get(name) if "=" not in name else None
            if f is not None and f.kind != "bool":
                if i + 1 == len(args):
                    # A flag that takes a value, last, without one: no "--"
                    # for it to take, so the parser says it needs one.
                    return flags
                i += 1
                flags.append(args[i])
            i += 1
        return [*flags, "--", *pos]

    def parse(self, args: list[str], environ: Callable[[str], str | None] = os.environ.get) -> list[str]:
        """Sets the flags from args (interspersed) and the environment; returns the positional arguments."""
        args = self.interspersed(args)
        seen: set[str] = set()
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                i += 1
                break
            if len(a) < 2 or not a.startswith("-"):
                break
            body = a[2:] if a.startswith("--") else a[1:]
            if not body or body.startswith("-") or body.startswith("="):
                raise UsageError(f"bad flag syntax: {a}")
            name, eq, raw = body.partition("=")
            if name in ("h", "help") and name not in self.flags:
                raise HelpRequested()
            f = self.flags.get(name)
            if f is None:
                raise UsageError(f"flag provided but not defined: -{name}")
            i += 1
            if not eq:
                if f.kind == "bool":
                    raw = "true"
                elif i < len(args):
                    raw = args[i]
                    i += 1
                else:
                    raise UsageError(f"flag needs an argument: -{name}")
            try:
                f.set(raw)
            except ValueError as e:
                raise UsageError(f"invalid value {_quote(raw)} for --{name}: want {e}") from None
            seen.add(name)
        errs = []
        for f in self.flags.values():
            if f.name in seen:
                continue
            v = environ(f.env())
            if v is not None:
                try:
                    f.set(v)
                except ValueError as e:
                    errs.append(f"{f.env()}={_quote(v)} (--{f.name}): want {e}")
        if errs:
            raise ValueError("\n".join(errs))
        return args[i:]

    def __getitem__(self, name: str) -> Any:
        return self.flags[name].value


def _quote(s: str) -> str:
    from . import _gojson

    return _gojson.string(s)

"""The cursor's string form (strict, 64-bit exact; rc2 with a fingerprint,
rc1 without) and its files, which the Go client reads and writes too."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import ringcast
from ringcast import Cursor, CursorError, format_cursor, parse_cursor

from conftest import CONFORMANCE

E = "9f86d081884c7d65"


def test_round_trip_keeps_64_bit_values() -> None:
    top = (1 << 64) - 1
    for c in [Cursor(top, top, (1 << 32) - 1), Cursor((1 << 53) + 1, (1 << 53) + 3, 0), Cursor(0xFEDCBA9876543211, 9007199254740993, 7)]:
        assert parse_cursor(format_cursor(c)) == c
    assert format_cursor(Cursor(top, 9007199254740993, 1)) == "rc1.ffffffffffffffff.9007199254740993.1"
    assert parse_cursor(f"rc1.{E}.18446744073709551615.3") == Cursor(0x9F86D081884C7D65, top, 3)
    assert format_cursor(ringcast.ZERO_CURSOR) == "rc1.0000000000000000.0.0"
    assert str(Cursor(0x9F86D081884C7D65, 1042, 3)) == f"rc1.{E}.1042.3"


def test_a_fingerprint_makes_it_rc2() -> None:
    c = Cursor(0x9F86D081884C7D65, 1042, 0, 0x5D41402A)
    assert format_cursor(c) == f"rc2.{E}.1042.0.5d41402a" and str(c) == format_cursor(c)
    assert parse_cursor(f"rc2.{E}.1042.0.5d41402a") == c
    assert format_cursor(Cursor(1, 2, 3, 7)) == "rc2.0000000000000001.2.3.00000007"
    top = (1 << 64) - 1
    for c in [Cursor(top, top, (1 << 32) - 1, (1 << 32) - 1), Cursor(1, 1, 0, 1), Cursor(5, 9007199254740993, 2, 0xABCDEF)]:
        assert parse_cursor(format_cursor(c)) == c
    # rc1 is still read: a cursor without a fingerprint.
    assert parse_cursor(f"rc1.{E}.1042.3").fingerprint == 0
    assert ringcast.CURSOR_FORMAT_VERSION == 1 and ringcast.CURSOR_FORMAT_VERSION_FINGERPRINT == 2


@pytest.mark.parametrize("bad", [
    "", "rc1", f"rc1.{E}.2", f"rc1.{E}.2.3.4", f"rc2.{E}.2.3", f"v1.{E}.2.3", f"RC1.{E}.2.3", f" rc1.{E}.2.3",
    f"rc1.{E}.2.3\n", f"rc1.{E}.2.3 ", "rc1.9F86D081884C7D65.2.3", "rc1.9f86d081884c7d6.2.3", "rc1.09f86d081884c7d65.2.3",
    "rc1.11068046444225730969.2.3", f"rc1.{E}.02.3", f"rc1.{E}.-2.3", f"rc1.{E}.+2.3", f"rc1.{E}.2.0x3", f"rc1.{E}.2.3e0",
    f"rc1.{E}.18446744073709551616.0", f"rc1.{E}.1.4294967296", "rc1.0000000000000000.5.0", f"rc1.{E}.0.1", "rc1..2.3",
    f"rc1.{E}.٣.0",
    f"rc2.{E}.2.3.00000000", f"rc2.{E}.2.3.5D41402A", f"rc2.{E}.2.3.5d41402", f"rc2.{E}.2.3.05d41402a",
    f"rc2.{E}.2.3.5d41402a.1", f"rc2.{E}.2.3.", f"rc2.{E}.0.0.5d41402a", f"rc2.{E}.0.1.5d41402a",
    "rc2.0000000000000000.2.0.5d41402a", f"rc1.{E}.2.3.5d41402a", f"rc3.{E}.2.3.5d41402a", f" rc2.{E}.2.3.5d41402a",
    f"rc2.{E}.2.3.5d41402a\n", f"rc2.{E}.2.3.0x41402a", f"rc2.{E}.02.3.5d41402a",
])
def test_parses_strictly(bad: str) -> None:
    with pytest.raises(CursorError):
        parse_cursor(bad)


def test_refuses_malformed_cursors() -> None:
    for args in [(-1, 0, 0), (1 << 64, 0, 0), (1, 1, 1.5), (1, True, 0), (0, 5, 0), (1, 0, 1),
                 (1, 1, 0, -1), (1, 1, 0, 1 << 32), (1, 0, 0, 7), (1, 1, 0, 1.0)]:
        with pytest.raises(CursorError):
            Cursor(*args)  # type: ignore[arg-type]


def test_cursor_files(tmp_path: Path) -> None:
    p = tmp_path / "app.cursor"
    assert ringcast.load_cursor(p) == ringcast.ZERO_CURSOR
    c = Cursor(0x9F86D081884C7D65, 12, 1)
    ringcast.save_cursor(p, c)
    assert p.read_text() == f"rc1.{E}.12.1\n"  # what the Go client writes
    assert ringcast.load_cursor(p) == c
    fp = Cursor(0x9F86D081884C7D65, 12, 1, 0xDEADBEEF)
    ringcast.save_cursor(p, fp)
    assert p.read_text() == f"rc2.{E}.12.1.deadbeef\n"  # what the Go client writes
    assert ringcast.load_cursor(p) == fp
    p.write_text("rc1.nope\n")
    with pytest.raises(CursorError) as e:
        ringcast.load_cursor(p)
    assert str(p) in str(e.value)
    # Temporaries a killed save left (digits after .NAME.tmp) go; nothing else does.
    for name in [".app.cursor.tmp123", ".app.cursor.tmp9876543210", ".app.cursor.tmpx1", ".other.tmp1", "keep"]:
        (tmp_path / name).write_text("x")
    ringcast.remove_cursor_temps(p)
    assert sorted(os.listdir(tmp_path)) == [".app.cursor.tmpx1", ".other.tmp1", "app.cursor", "keep"]


#: clients/conformance/cursors.json: the cursor strings the Go and TypeScript
#: clients parse the same way (a file read here is in test_conformance.READ).
CURSORS = json.loads((CONFORMANCE / "cursors.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CURSORS["valid"], ids=[c["text"] for c in CURSORS["valid"]])
def test_cursor_text_as_shared_valid(case: dict[str, Any]) -> None:
    c = parse_cursor(case["text"])
    assert c == Cursor(int(case["epoch"]), int(case["seq"]), case["fact"], case["fingerprint"])
    assert format_cursor(c) == case["text"]


@pytest.mark.parametrize("case", CURSORS["invalid"], ids=[repr(c["text"]) for c in CURSORS["invalid"]])
def test_cursor_text_as_shared_invalid(case: dict[str, Any]) -> None:
    with pytest.raises(CursorError):
        parse_cursor(case["text"])

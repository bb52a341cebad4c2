"""The cursor: the position of what the application has consumed, as
(epoch, seq, fact), with the fingerprint of the commit at seq, and its
string form. This module is the one place that reads and writes that form.

- fact = 0: commit seq (and everything before it) is fully consumed.
- fact = K > 0: the facts of commit seq with index < K are consumed; a
  resume delivers the rest of that commit first.
- seq = 0: nothing of this epoch is consumed; a subscribe starts with a
  snapshot.
- fingerprint (uint32, 0 = none): the fingerprint of the positioned
  response that moved the cursor to seq, which names the commit there. A
  server whose log holds another commit at seq under the same epoch (a
  restored or replaced store) answers with a resync (reason
  commit_mismatch) instead of carrying the cursor onto other commits. A
  cursor without one is served by its epoch and seq alone.

The string form is the Go and TypeScript clients' (and `ringcast tail
--cursor-file`'s): ``rc2.<epoch>.<seq>.<fact>.<fingerprint>`` with a
fingerprint, ``rc1.<epoch>.<seq>.<fact>`` without one; the epoch as exactly
16 lower-case hex digits (as the server logs it), the fingerprint as
exactly 8 (not all zero), seq and fact in canonical decimal (no sign, no
leading zeros), e.g. ``rc2.9f86d081884c7d65.1042.3.5d41402a`` or
``rc1.9f86d081884c7d65.1042.3``. ``rc1``/``rc2`` is the format version:
treat the string as opaque.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The format version format_cursor writes for a cursor without a fingerprint.
CURSOR_FORMAT_VERSION = 1
#: The format version format_cursor writes for a cursor with a fingerprint.
CURSOR_FORMAT_VERSION_FINGERPRINT = 2

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1
_CURSOR_RE = re.compile(r"rc1\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})")
_CURSOR_FP_RE = re.compile(r"rc2\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})\.([0-9a-f]{8})")


class CursorError(ValueError):
    """A malformed cursor or cursor string."""


@dataclass(frozen=True, order=False)
class Cursor:
    """A position: epoch and seq are uint64, fact a uint32; fingerprint (a
    uint32, 0: none) names the commit at seq."""

    epoch: int = 0
    seq: int = 0
    fact: int = 0
    fingerprint: int = 0

    def __post_init__(self) -> None:
        check_cursor(self)

    def is_zero(self) -> bool:
        return self.epoch == 0 and self.seq == 0 and self.fact == 0 and self.fingerprint == 0

    def __str__(self) -> str:
        return format_cursor(self)


def check_cursor(c: Cursor) -> Cursor:
    """Raises CursorError unless c is well formed: epoch and seq within
    uint64, fact and fingerprint within uint32, a fact offset or a
    fingerprint only with a seq, a seq only with an epoch."""
    for name, v, top in (("epoch", c.epoch, _U64_MAX), ("seq", c.seq, _U64_MAX), ("fact", c.fact, _U32_MAX),
                         ("fingerprint", c.fingerprint, _U32_MAX)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > top:
            raise CursorError(f"cursor: {name} must be an integer in [0, {top + 1})")
    if c.fact > 0 and c.seq == 0:
        raise CursorError("cursor: a fact offset requires a seq")
    if c.fingerprint > 0 and c.seq == 0:
        raise CursorError("cursor: a fingerprint requires a seq")
    if c.seq > 0 and c.epoch == 0:
        raise CursorError("cursor: a seq requires an epoch")
    return c


#: The cursor of a subscriber that has consumed nothing.
ZERO_CURSOR = Cursor()


def format_cursor(c: Cursor) -> str:
    """The string form, ``rc2.<epoch hex>.<seq>.<fact>.<fingerprint hex>``,
    or ``rc1.<epoch hex>.<seq>.<fact>`` when c has no fingerprint."""
    check_cursor(c)
    base = f"{format_epoch(c.epoch)}.{c.seq}.{c.fact}"
    if c.fingerprint != 0:
        return f"rc{CURSOR_FORMAT_VERSION_FINGERPRINT}.{base}.{c.fingerprint:08x}"
    return f"rc{CURSOR_FORMAT_VERSION}.{base}"


def parse_cursor(s: str) -> Cursor:
    """The strict inverse of format_cursor: exactly the strings it
    produces, and a CursorError for anything else (other versions, signs,
    leading zeros, whitespace, values out of range)."""
    if not isinstance(s, str):
        raise CursorError("cursor: not a string")
    m = _CURSOR_RE.fullmatch(s) or _CURSOR_FP_RE.fullmatch(s)
    fp = int(m.group(4), 16) if m is not None and m.lastindex == 4 else 0
    if m is None or (m.lastindex == 4 and fp == 0):
        shown = s if len(s) <= 64 else s[:64] + "…"
        raise CursorError(f"cursor: malformed {shown!r} (want rc2.<16 hex epoch>.<seq>.<fact>.<8 hex fingerprint, "
                          "not 0> or rc1.<16 hex epoch>.<seq>.<fact>)")
    return Cursor(epoch=int(m.group(1), 16), seq=int(m.group(2)), fact=int(m.group(3)), fingerprint=fp)


def format_epoch(epoch: int) -> str:
    """An epoch as the 16 lower-case hex digits the server logs."""
    return f"{epoch:016x}"

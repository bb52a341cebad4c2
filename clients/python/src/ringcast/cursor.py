"""The cursor: the position of what the application has consumed, as
(epoch, seq, fact), and its string form. This module is the one place that
reads and writes that form.

- fact = 0: commit seq (and everything before it) is fully consumed.
- fact = K > 0: the facts of commit seq with index < K are consumed; a
  resume delivers the rest of that commit first.
- seq = 0: nothing of this epoch is consumed; a subscribe starts with a
  snapshot.

The string form is the Go and TypeScript clients' (and `ringcast tail
--cursor-file`'s): ``rc1.<epoch>.<seq>.<fact>``, the epoch as exactly 16
lower-case hex digits (as the server logs it), seq and fact in canonical
decimal (no sign, no leading zeros), e.g. ``rc1.9f86d081884c7d65.1042.3``.
``rc1`` is the format version: treat the string as opaque.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The format version written by format_cursor.
CURSOR_FORMAT_VERSION = 1

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1
_CURSOR_RE = re.compile(r"rc1\.([0-9a-f]{16})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,9})")


class CursorError(ValueError):
    """A malformed cursor or cursor string."""


@dataclass(frozen=True, order=False)
class Cursor:
    """A position: epoch and seq are uint64, fact a uint32."""

    epoch: int = 0
    seq: int = 0
    fact: int = 0

    def __post_init__(self) -> None:
        check_cursor(self)

    def is_zero(self) -> bool:
        return self.epoch == 0 and self.seq == 0 and self.fact == 0

    def __str__(self) -> str:
        return format_cursor(self)


def check_cursor(c: Cursor) -> Cursor:
    """Raises CursorError unless c is well formed: epoch and seq within
    uint64, fact within uint32, a fact offset only with a seq, a seq only
    with an epoch."""
    for name, v, top in (("epoch", c.epoch, _U64_MAX), ("seq", c.seq, _U64_MAX), ("fact", c.fact, _U32_MAX)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > top:
            raise CursorError(f"cursor: {name} must be an integer in [0, {top + 1})")
    if c.fact > 0 and c.seq == 0:
        raise CursorError("cursor: a fact offset requires a seq")
    if c.seq > 0 and c.epoch == 0:
        raise CursorError("cursor: a seq requires an epoch")
    return c


#: The cursor of a subscriber that has consumed nothing.
ZERO_CURSOR = Cursor()


def format_cursor(c: Cursor) -> str:
    """The string form, ``rc1.<epoch hex>.<seq>.<fact>``."""
    check_cursor(c)
    return f"rc{CURSOR_FORMAT_VERSION}.{format_epoch(c.epoch)}.{c.seq}.{c.fact}"


def parse_cursor(s: str) -> Cursor:
    """The strict inverse of format_cursor: exactly the strings it
    produces, and a CursorError for anything else (other versions, signs,
    leading zeros, whitespace, values out of range)."""
    if not isinstance(s, str):
        raise CursorError("cursor: not a string")
    m = _CURSOR_RE.fullmatch(s)
    if m is None:
        shown = s if len(s) <= 64 else s[:64] + "…"
        raise CursorError(f"cursor: malformed {shown!r} (want rc1.<16 hex epoch>.<seq>.<fact>)")
    return Cursor(epoch=int(m.group(1), 16), seq=int(m.group(2)), fact=int(m.group(3)))


def format_epoch(epoch: int) -> str:
    """An epoch as the 16 lower-case hex digits the server logs."""
    return f"{epoch:016x}"

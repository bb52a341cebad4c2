"""Reconnect and retry pacing: capped exponential backoff with full jitter
and a floor, as the Go and TypeScript clients pace theirs.

The n-th consecutive retry (n = 0, 1, …) waits a uniformly random delay in
[min_ms, min(max_ms, initial_ms · 2^n)]. A subscription's n goes back to 0
after a healthy stream: one that moved the cursor to a new position or
stayed open at least reset_ms.
"""

from __future__ import annotations

import math
import re
import random
from dataclasses import dataclass
from typing import Callable

from . import _defaults
from .errors import ConnectError


@dataclass(frozen=True)
class Backoff:
    """Backoff bounds in milliseconds; None, zero or negative: the default.

    resolve() settles them as clients/conformance/backoff.json says:
    min_ms, initial_ms and max_ms below 1 ms count as 1 ms; max_ms caps
    min_ms and initial_ms, so no delay ever exceeds it; min_ms raises
    initial_ms. So Backoff(max_ms=80) waits 80 ms every time.
    """

    min_ms: float | None = None
    initial_ms: float | None = None
    max_ms: float | None = None
    reset_ms: float | None = None

    def resolve(self) -> "Backoff":
        max_ms = max(1.0, _given(self.max_ms, _defaults.BACKOFF_MAX_MS))
        min_ms = min(max_ms, max(1.0, _given(self.min_ms, _defaults.BACKOFF_MIN_MS)))
        initial_ms = min(max_ms, max(min_ms, _given(self.initial_ms, _defaults.BACKOFF_INITIAL_MS)))
        reset_ms = _given(self.reset_ms, _defaults.BACKOFF_RESET_MS)
        return Backoff(min_ms=_num(min_ms), initial_ms=_num(initial_ms), max_ms=_num(max_ms), reset_ms=_num(reset_ms))

    def delay_ms(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """The delay before retry number attempt (0-based) of resolved bounds."""
        b = self if self._resolved() else self.resolve()
        assert b.min_ms is not None and b.initial_ms is not None and b.max_ms is not None
        ceiling = min(b.max_ms, b.initial_ms * 2 ** min(attempt, 40))
        return b.min_ms + rand() * (ceiling - b.min_ms)

    def _resolved(self) -> bool:
        return None not in (self.min_ms, self.initial_ms, self.max_ms, self.reset_ms)


def _given(v: float | None, default: float) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
        return float(v)
    return float(default)


def _num(v: float) -> float:
    """v, as an int when it is whole (so resolved bounds compare equal to JSON's)."""
    return int(v) if float(v).is_integer() else v


#: The defaults, shared with the Go and TypeScript clients: 100 ms, 250 ms, 30 s, 30 s.
DEFAULT_BACKOFF = Backoff().resolve()


def retry_after_ms(err: BaseException | None) -> float:
    """The wait a resource_exhausted refusal asked for with its Retry-After
    (whole seconds), capped at 5 minutes, or 0. A retry waits at least that
    long, whatever the backoff says."""
    if not isinstance(err, ConnectError) or err.code != "resource_exhausted":
        return 0
    return parse_retry_after_ms(err.metadata.get("retry-after") or "")


_RETRY_AFTER = re.compile(r"[ \t]*([0-9]+)[ \t]*")


def parse_retry_after_ms(value: str) -> float:
    """A Retry-After value read as every client reads it
    (clients/conformance/retry-after.json): whole seconds in ASCII digits,
    spaces or tabs around them allowed, capped at 5 minutes; anything else
    ("5s", "-1", "1.5", "²", an HTTP-date) is no wait."""
    m = _RETRY_AFTER.fullmatch(value)
    if m is None:
        return 0
    return min(int(m.group(1)) * 1000, _defaults.RETRY_AFTER_CAP_MS)

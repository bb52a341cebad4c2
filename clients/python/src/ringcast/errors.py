"""Connect errors: a code (Connect's names: "unavailable",
"resource_exhausted", …), a message and the metadata (headers and
trailers) that came with it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import _defaults

#: Every Connect code by name, and its gRPC number.
CODES: Mapping[str, int] = {
    "canceled": 1,
    "unknown": 2,
    "invalid_argument": 3,
    "deadline_exceeded": 4,
    "not_found": 5,
    "already_exists": 6,
    "permission_denied": 7,
    "resource_exhausted": 8,
    "failed_precondition": 9,
    "aborted": 10,
    "out_of_range": 11,
    "unimplemented": 12,
    "internal": 13,
    "unavailable": 14,
    "data_loss": 15,
    "unauthenticated": 16,
}

#: Codes that no retry can fix (clients/conformance/defaults.json): a
#: subscription ends with them, publish() raises them at once. Every other
#: code, network errors and streams that end OK are retried.
PERMANENT_CODES: frozenset[str] = frozenset(_defaults.PERMANENT_CODES)

#: The message of the Unauthenticated error that ends a stream when its token expired.
TOKEN_EXPIRED_MESSAGE: str = _defaults.TOKEN_EXPIRED_MESSAGE


class Metadata:
    """Case-insensitive multi-valued headers and trailers."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self._items: list[tuple[str, str]] = [(k.lower(), v) for k, v in pairs]

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of name, or default."""
        name = name.lower()
        for k, v in self._items:
            if k == name:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self._items if k == name]

    def extend(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._items.extend((k.lower(), v) for k, v in pairs)

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __repr__(self) -> str:
        return f"Metadata({self._items!r})"


class ConnectError(Exception):
    """An RPC's failure.

    wire is True when a Connect server sent the error (its code and message
    are the server's); False when the client made it: a network error
    (network is then True), or an answer that was not Connect (an HTML
    page, a 404), mapped from its HTTP status.
    """

    def __init__(
        self,
        code: str,
        message: str = "",
        metadata: Metadata | None = None,
        *,
        wire: bool = False,
        network: bool = False,
    ) -> None:
        if code not in CODES:
            code = "unknown"
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.metadata = metadata if metadata is not None else Metadata()
        self.wire = wire
        self.network = network


def is_permanent(err: BaseException | None) -> bool:
    """Whether err is a ConnectError with a code no retry can fix."""
    return isinstance(err, ConnectError) and err.code in PERMANENT_CODES


def is_token_expired(err: BaseException | None) -> bool:
    """Whether err is the server's "token expired" end of a stream (or
    refusal of a call): the one Unauthenticated error a fresh token can fix."""
    return isinstance(err, ConnectError) and err.code == "unauthenticated" and err.message == TOKEN_EXPIRED_MESSAGE


def is_key_reused(err: BaseException | None) -> bool:
    """Whether err is the server's refusal of a publish whose idempotency key
    its publisher already used, within the dedupe window, for a commit with
    other facts: code already_exists (docs/protocol.md, "Publish"). It is
    permanent: publish() raises it at once. A retry must send the same
    facts; a new commit needs a new key."""
    return isinstance(err, ConnectError) and err.code == "already_exists"

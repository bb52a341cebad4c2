"""The rules every ringcast client shares that are data, as the Go and
TypeScript clients have them (clients/conformance/defaults.json; a test
holds these values to that file)."""

from __future__ import annotations

from typing import Final

#: Reconnect backoff bounds in milliseconds.
BACKOFF_MIN_MS: Final = 100
BACKOFF_INITIAL_MS: Final = 250
BACKOFF_MAX_MS: Final = 30000
BACKOFF_RESET_MS: Final = 30000

#: The longest wait a resource_exhausted refusal's Retry-After can impose on a retry.
RETRY_AFTER_CAP_MS: Final = 300000

#: The idle timeout: IDLE_HEARTBEAT_MULTIPLE heartbeat intervals plus
#: IDLE_GRACE_MS, or IDLE_UNTIL_HEARTBEAT_KNOWN_MS before the server announced one.
IDLE_HEARTBEAT_MULTIPLE: Final = 3
IDLE_GRACE_MS: Final = 1000
IDLE_UNTIL_HEARTBEAT_KNOWN_MS: Final = 45000

#: The codes no reconnect can fix: a subscription ends with them instead of retrying.
PERMANENT_CODES: Final = (
    "unauthenticated",
    "permission_denied",
    "invalid_argument",
    "failed_precondition",
    "out_of_range",
    "not_found",
    "already_exists",
    "unimplemented",
)

#: The server's message of the Unauthenticated error that ends a stream (or
#: refuses a call) because its token expired.
TOKEN_EXPIRED_MESSAGE: Final = "token expired"

#: publish(): how many requests at most, and a generated idempotency key:
#: the prefix and that many random bytes in lower-case hex.
PUBLISH_ATTEMPTS: Final = 5
PUBLISH_IDEMPOTENCY_KEY_PREFIX: Final = "rc-"
PUBLISH_IDEMPOTENCY_KEY_RANDOM_BYTES: Final = 16

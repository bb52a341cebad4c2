"""ringcast: subscribe to a ringcast server without losing or repeating a
fact across disconnects, restarts, lease ends and lag; publish safely.

    import ringcast

    client = ringcast.Client("http://127.0.0.1:8080")
    sub = client.subscribe(cursor=ringcast.load_cursor("app.cursor"))
    for item in sub:  # reconnects, resumes and resyncs on its own
        if item.kind == "fact":
            apply(item)
        ringcast.save_cursor("app.cursor", item.cursor)  # once apply() succeeded

The messages generated from ringcast.proto are ringcast.pb (pb.Fact,
pb.PublishRequest, pb.ServerStatus, …).
"""

from ._gen.ringcast.v1 import ringcast_pb2 as pb
from .backoff import DEFAULT_BACKOFF, Backoff, retry_after_ms
from .client import Client
from .connect import Transport
from .cursor import (CURSOR_FORMAT_VERSION, CURSOR_FORMAT_VERSION_FINGERPRINT, ZERO_CURSOR, Cursor, CursorError, check_cursor,
                     format_cursor, format_epoch, parse_cursor)
from .cursorfile import load_cursor, remove_cursor_temps, save_cursor
from .errors import (PERMANENT_CODES, TOKEN_EXPIRED_MESSAGE, ConnectError, Metadata, is_key_reused, is_permanent,
                     is_token_expired)
from .items import CaughtUpSignal, FactItem, ResyncedSignal, StreamItem, reason_name
from .publish import PublishOutcome, outcome, publish, publish_batch, random_key, to_fact
from .subscribe import ConnectionEvent, Subscription

__version__ = "0.1.0"

__all__ = [
    "CURSOR_FORMAT_VERSION", "CURSOR_FORMAT_VERSION_FINGERPRINT", "DEFAULT_BACKOFF", "PERMANENT_CODES",
    "TOKEN_EXPIRED_MESSAGE", "ZERO_CURSOR",
    "Backoff", "CaughtUpSignal", "Client", "ConnectError", "ConnectionEvent", "Cursor", "CursorError", "FactItem",
    "Metadata", "PublishOutcome", "ResyncedSignal", "StreamItem", "Subscription", "Transport",
    "check_cursor", "format_cursor", "format_epoch", "is_key_reused", "is_permanent", "is_token_expired", "load_cursor",
    "outcome",
    "parse_cursor", "pb", "publish", "publish_batch", "random_key", "reason_name", "remove_cursor_temps",
    "retry_after_ms", "save_cursor", "to_fact",
]

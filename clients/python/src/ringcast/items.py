"""What a subscription yields: facts, and the caught_up and resynced signals."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from ._gen.ringcast.v1 import ringcast_pb2 as pb
from .cursor import Cursor


@dataclass(frozen=True)
class FactItem:
    """One fact of a commit, as this stream delivers it. Facts of a commit
    come in index order; last marks the last one this stream delivers for
    the commit (with a topic filter, fewer than fact_count facts may come).
    cursor is the subscription's cursor once this item is consumed."""

    epoch: int
    seq: int
    index: int
    last: bool
    fact_count: int
    topic: str
    type: str
    key: str
    content_type: str
    cursor: Cursor
    #: The structured payload as Python values (numbers that are whole and
    #: below 2^53 as int), when the fact carries one.
    data: dict[str, Any] | None = None
    #: The opaque payload, when the fact carries one (see content_type).
    binary_data: bytes | None = None
    #: The W3C trace context of the publish that made this commit, when the producer sent one.
    traceparent: str | None = None
    #: The commit time (UTC), to the microsecond; event_time_ns has it to the nanosecond.
    event_time: _dt.datetime | None = None
    event_time_ns: int | None = None
    #: The fact as it arrived.
    fact: pb.Fact = field(default_factory=pb.Fact, repr=False, compare=False)
    kind: Literal["fact"] = "fact"


@dataclass(frozen=True)
class CaughtUpSignal:
    """The replay or snapshot is done: what follows is live."""

    epoch: int
    head_seq: int
    #: After a latest_per_key snapshot: how many keys the server's table had evicted since boot.
    snapshot_evicted_keys: int
    cursor: Cursor
    kind: Literal["caught_up"] = "caught_up"


@dataclass(frozen=True)
class ResyncedSignal:
    """The server could not serve the cursor: what was missed is gone. The
    cursor was discarded, and the facts up to the next caught_up are a fresh
    snapshot, not a replay. Always yielded before the first snapshot fact."""

    #: The Reason value (pb.REASON_EPOCH_MISMATCH, …) and its name ("EPOCH_MISMATCH").
    reason: int
    reason_name: str
    requested_seq: int
    oldest_seq: int
    head_seq: int
    #: The epoch of the running instance (new positions belong to it).
    epoch: int
    #: The epoch of the discarded cursor.
    previous_epoch: int
    #: True when the snapshot follows on the same stream (a Gap), False after ResyncRequired.
    inline: bool
    cursor: Cursor
    kind: Literal["resynced"] = "resynced"


StreamItem = Union[FactItem, CaughtUpSignal, ResyncedSignal]


def reason_name(reason: int) -> str:
    """"EPOCH_MISMATCH" for pb.REASON_EPOCH_MISMATCH, etc."""
    try:
        return str(pb.Reason.Name(reason)).removeprefix("REASON_")
    except ValueError:
        return f"REASON_{reason}"


def struct_to_python(s: Any) -> Any:
    """A google.protobuf Struct, Value or ListValue as Python values."""
    name = s.DESCRIPTOR.full_name
    if name == "google.protobuf.Struct":
        return {k: struct_to_python(v) for k, v in s.fields.items()}
    if name == "google.protobuf.ListValue":
        return [struct_to_python(v) for v in s.values]
    which = s.WhichOneof("kind")
    if which == "struct_value":
        return struct_to_python(s.struct_value)
    if which == "list_value":
        return struct_to_python(s.list_value)
    if which == "number_value":
        n = s.number_value
        return int(n) if n.is_integer() and abs(n) < 2**53 else n
    if which == "string_value":
        return s.string_value
    if which == "bool_value":
        return s.bool_value
    return None

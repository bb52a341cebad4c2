"""The subscription: an iterator over facts and lifecycle signals that
survives disconnects, server restarts, lease ends and lag, resuming from
its cursor without losing or repeating a fact."""

from __future__ import annotations

import datetime as _dt
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, cast

from google.protobuf import timestamp_pb2

from . import _defaults
from ._gen.ringcast.v1 import ringcast_pb2 as pb
from .backoff import Backoff, retry_after_ms
from .connect import Transport
from .cursor import ZERO_CURSOR, Cursor, check_cursor, format_cursor, format_epoch, parse_cursor
from .errors import PERMANENT_CODES, ConnectError, is_token_expired
from .items import CaughtUpSignal, FactItem, ResyncedSignal, StreamItem, reason_name, struct_to_python

SnapshotName = Literal["retained", "latest_per_key"]
OnUnservableName = Literal["resync_terminal", "snapshot_inline"]

_SNAPSHOTS = {"retained": pb.SNAPSHOT_RETAINED, "latest_per_key": pb.SNAPSHOT_LATEST_PER_KEY}
_ON_UNSERVABLE = {"resync_terminal": pb.ON_UNSERVABLE_RESYNC_TERMINAL, "snapshot_inline": pb.ON_UNSERVABLE_SNAPSHOT_INLINE}


@dataclass(frozen=True)
class ConnectionEvent:
    """A connection lifecycle change (SubscribeOptions on_connection):

    - "connecting": a subscribe is being sent with cursor (attempt: 0-based);
    - "open": the stream's first response arrived (epoch);
    - "caught_up": the stream caught up (every stream; the caught_up item is
      yielded only when the application was not live already);
    - "reconnecting": the stream ended (OK, with error, or to resync
      (resync)); the next attempt starts after delay_ms.
    """

    state: Literal["connecting", "open", "caught_up", "reconnecting"]
    attempt: int = 0
    cursor: Cursor | None = None
    epoch: int = 0
    head_seq: int = 0
    delay_ms: float = 0
    error: ConnectError | None = None
    resync: bool = False


TokenSource = Union[str, Callable[[], str]]


class _AttemptState:
    __slots__ = ("caught_up", "progress", "resync", "ended", "broken", "opened")

    def __init__(self) -> None:
        self.caught_up = False  # this stream sent CaughtUp
        self.progress = False  # this stream moved the cursor to a new position
        self.resync = False  # the stream ended with ResyncRequired
        self.ended = False  # a bound was reached: the iteration ends
        self.broken = False  # another epoch without a resync: reconnect with the cursor
        self.opened = False


class Subscription:
    """Iterate it (once) for FactItem, CaughtUpSignal and ResyncedSignal.

    An item is consumed the moment the iterator hands it over: its cursor
    (item.cursor, and subscription.cursor until the next item) already
    covers it. Persist the cursor only after the item's effects succeeded.
    Leaving the loop (break, an exception in its body) keeps the cursor at
    the item after the last one delivered, even in the middle of a commit:
    resuming from it delivers the rest of that commit and nothing twice.

    Progress and status events move the cursor to (seq, 0), heartbeats keep
    the stream alive; none is yielded. caught_up is yielded on each
    transition to live: not again after a reconnect whose replay delivered
    nothing. Transient failures (every code outside PERMANENT_CODES, network
    errors, streams that end) reconnect with the cursor after a backoff
    delay (at least a resource_exhausted refusal's Retry-After); a permanent
    code ends the iteration with its ConnectError.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        cursor: Cursor | str | None = None,
        topics: Sequence[str] = (),
        snapshot: SnapshotName | int | None = None,
        on_unservable: OnUnservableName | int | None = None,
        until_seq: int = 0,
        end_at_head: bool = False,
        since_time: _dt.datetime | None = None,
        headers: Mapping[str, str] | None = None,
        token: TokenSource | None = None,
        backoff: Backoff | None = None,
        idle_timeout_ms: float | None = None,
        on_connection: Callable[[ConnectionEvent], None] | None = None,
    ) -> None:
        self._t = transport
        if cursor is None:
            self._cursor = ZERO_CURSOR
        elif isinstance(cursor, str):
            self._cursor = parse_cursor(cursor)
        else:
            self._cursor = check_cursor(cursor)
        if isinstance(topics, str):
            raise TypeError("ringcast: topics is a sequence of topics, not one string")
        self._topics = list(topics)
        self._snapshot = _option(snapshot, _SNAPSHOTS, "snapshot")
        self._on_unservable = _option(on_unservable, _ON_UNSERVABLE, "on_unservable")
        if not isinstance(until_seq, int) or until_seq < 0 or until_seq >= 1 << 64:
            raise ValueError(f"ringcast: until_seq must be a uint64, got {until_seq!r}")
        self._until = until_seq
        self._end_at_head = bool(end_at_head)
        if since_time is not None:
            if not isinstance(since_time, _dt.datetime) or since_time.tzinfo is None:
                raise ValueError("ringcast: since_time must be a timezone-aware datetime")
        self._since_time = since_time
        self._headers = dict(headers or {})
        self._token = token
        self._backoff = (backoff or Backoff()).resolve()
        if idle_timeout_ms is not None and (not isinstance(idle_timeout_ms, (int, float)) or not math.isfinite(idle_timeout_ms)):
            raise ValueError(f"ringcast: idle_timeout_ms must be a finite number of milliseconds, got {idle_timeout_ms!r}")
        self._idle_fixed = idle_timeout_ms is not None and idle_timeout_ms != 0
        self._idle_ms: float = (idle_timeout_ms if idle_timeout_ms is not None and idle_timeout_ms > 0 else -1) \
            if self._idle_fixed else _defaults.IDLE_UNTIL_HEARTBEAT_KNOWN_MS
        self._on_connection = on_connection
        self._started = False
        self._live = False  # the application was told caught_up, nothing replayed since
        self._time_spent = False  # resynced: a zero cursor means a snapshot, never since_time again
        self._wake = threading.Event()

    @property
    def cursor(self) -> Cursor:
        """The position of what the application has consumed, current at any moment."""
        return self._cursor

    def cursor_string(self) -> str:
        """The cursor's string form (format_cursor)."""
        return format_cursor(self._cursor)

    def reconnect_now(self) -> None:
        """Cuts short the delay before the next reconnect (from another thread)."""
        self._wake.set()

    def __iter__(self) -> Iterator[StreamItem]:
        if self._started:
            raise RuntimeError("ringcast: a Subscription can be iterated only once")
        self._started = True
        return self._run()

    def _emit(self, ev: ConnectionEvent) -> None:
        if self._on_connection is not None:
            self._on_connection(ev)

    def _authorization(self) -> str:
        tok = self._token
        try:
            value = tok if isinstance(tok, str) else tok()  # type: ignore[misc]
        except Exception as e:  # the token source's failure ends the iteration
            raise ConnectError("unauthenticated", f"token source failed: {e}") from e
        return f"Bearer {value}"

    def _run(self) -> Iterator[StreamItem]:
        backoff = self._backoff
        assert backoff.reset_ms is not None
        attempt = 0
        refreshed = False  # the last stream was reopened for an expired token
        while True:
            if self._bound_reached():
                return
            headers = dict(self._headers)
            if self._token is not None:
                headers["Authorization"] = self._authorization()
            self._emit(ConnectionEvent("connecting", attempt=attempt, cursor=self._cursor))
            started = time.monotonic()
            st = _AttemptState()
            error: ConnectError | None = None
            stream = None
            try:
                idle = self._idle_ms / 1000 if self._idle_ms >= 0 else None
                try:
                    stream = self._t.server_stream("SubscribeEvents", self._request(), pb.SubscribeEventsResponse,
                                                   headers=headers, idle_timeout_s=idle)
                    messages = iter(stream)
                except ConnectError as e:
                    messages = iter(())
                    error = e
                while error is None:
                    try:
                        res = next(messages)
                    except StopIteration:
                        break
                    except ConnectError as e:
                        error = e
                        break
                    if not st.opened:
                        st.opened = True
                        self._emit(ConnectionEvent("open", epoch=res.instance_epoch))
                    for item in self._handle(res, st):
                        yield item
                        if self._bound_reached():
                            return
                    if st.ended or self._bound_reached():
                        return
                    if st.broken:
                        error = ConnectError("internal", f"stream switched from epoch {format_epoch(self._cursor.epoch)} "
                                             f"to {format_epoch(res.instance_epoch)} without a resync")
                        break
            finally:
                if stream is not None:
                    stream.close()
            # A stream that opened and then reached its token's expiry is
            # reopened with a fresh token (at once, or after the backoff when
            # it expired again soon after the last refresh); a fresh token
            # refused at once (expired already) is an error.
            expired = is_token_expired(error)
            if error is not None and error.code in PERMANENT_CODES and not (expired and (st.opened or not refreshed)):
                raise error
            lived = (time.monotonic() - started) * 1000 >= backoff.reset_ms
            if expired:
                if not refreshed or lived:
                    refreshed = True
                    continue
            else:
                refreshed = False
            if st.progress or lived:
                attempt = 0
            delay = max(backoff.delay_ms(attempt), retry_after_ms(error))
            self._emit(ConnectionEvent("reconnecting", attempt=attempt, delay_ms=delay, error=error, resync=st.resync))
            attempt += 1
            self._wake.clear()
            self._wake.wait(delay / 1000)

    def _handle(self, res: pb.SubscribeEventsResponse, st: _AttemptState) -> Iterator[StreamItem]:
        which = res.WhichOneof("event")
        if which == "commit":
            yield from self._commit(res, st)
        elif which in ("progress", "server_status"):
            if which == "server_status" and res.seq == 0:
                # A replica's status on a durable store: unpositioned; it moves
                # no cursor, whatever its epoch, and does not make the stream healthy.
                self._heartbeat(res.server_status.limits.heartbeat_interval if res.server_status.HasField("limits") else None)
                return
            if self._beyond_bound(res):
                st.ended = True
                return
            if self._switched_epoch(res):
                st.broken = True
                return
            if res.seq > self._cursor.seq or res.instance_epoch != self._cursor.epoch:
                self._cursor = Cursor(res.instance_epoch, res.seq, 0, res.fingerprint)
                st.progress = True
            if which == "server_status" and res.server_status.HasField("limits"):
                self._heartbeat(res.server_status.limits.heartbeat_interval)
        elif which == "caught_up":
            cu = res.caught_up
            self._heartbeat(cu.heartbeat_interval if cu.HasField("heartbeat_interval") else None)
            st.caught_up = True
            self._emit(ConnectionEvent("caught_up", epoch=res.instance_epoch, head_seq=cu.head_seq))
            if not self._live:
                self._live = True
                yield CaughtUpSignal(epoch=res.instance_epoch, head_seq=cu.head_seq,
                                     snapshot_evicted_keys=cu.snapshot_evicted_keys, cursor=self._cursor)
            if self._end_at_head:
                st.ended = True
        elif which in ("gap", "resync_required"):
            st.resync = which == "resync_required"
            self._live = False
            yield self._resynced(res, res.gap if which == "gap" else res.resync_required, which == "gap")

    def _heartbeat(self, hb: object | None) -> None:
        """Takes the interval the server announced as the basis of the idle
        timeout (unless set by the caller); it applies from the next stream."""
        if hb is None or self._idle_fixed:
            return
        ms = hb.seconds * 1000 + hb.nanos / 1e6  # type: ignore[attr-defined]
        if ms > 0:
            self._idle_ms = _defaults.IDLE_HEARTBEAT_MULTIPLE * ms + _defaults.IDLE_GRACE_MS

    def _commit(self, res: pb.SubscribeEventsResponse, st: _AttemptState) -> Iterator[FactItem]:
        seq = res.seq
        if self._beyond_bound(res):
            st.ended = True
            return
        if self._switched_epoch(res):
            st.broken = True
            return
        cur = self._cursor
        same_epoch = cur.epoch == res.instance_epoch
        # What this cursor already covers (defensive: the server never resends it).
        if same_epoch and (seq < cur.seq or (seq == cur.seq and cur.fact == 0 and seq > 0)):
            return
        start = cur.fact if same_epoch and seq == cur.seq else 0
        c = res.commit
        facts = [f for f in c.facts if f.index >= start]
        st.progress = True
        if not facts:
            # Nothing (more) of this commit for this stream: it is consumed.
            self._cursor = Cursor(res.instance_epoch, seq, 0, res.fingerprint)
            return
        event_time = event_time_ns = None
        if res.HasField("event_time"):
            event_time_ns = res.event_time.seconds * 1_000_000_000 + res.event_time.nanos
            event_time = _dt.datetime.fromtimestamp(res.event_time.seconds, _dt.timezone.utc) + \
                _dt.timedelta(microseconds=res.event_time.nanos // 1000)
        if not st.caught_up:
            self._live = False  # a replay: tell the application when it is over
        for i, f in enumerate(facts):
            last = i == len(facts) - 1
            payload = f.WhichOneof("payload")
            # Consumed as it is handed over: the cursor moves first; inside
            # the commit as after it, the cursor names it by its fingerprint.
            self._cursor = Cursor(res.instance_epoch, seq, 0 if last else f.index + 1, res.fingerprint)
            yield FactItem(
                epoch=res.instance_epoch, seq=seq, index=f.index, last=last, fact_count=c.fact_count,
                topic=f.topic, type=f.type, key=f.key, content_type=f.content_type, cursor=self._cursor,
                data=struct_to_python(f.data) if payload == "data" else None,
                binary_data=f.binary_data if payload == "binary_data" else None,
                traceparent=c.traceparent or None, event_time=event_time, event_time_ns=event_time_ns, fact=f,
            )

    def _resynced(self, res: pb.SubscribeEventsResponse, r: pb.Gap | pb.ResyncRequired, inline: bool) -> ResyncedSignal:
        previous = self._cursor.epoch
        # Discard the cursor, fingerprint and all: what follows is a snapshot of this instance.
        self._cursor = ZERO_CURSOR
        self._time_spent = True
        return ResyncedSignal(reason=r.reason, reason_name=reason_name(r.reason), requested_seq=r.requested_seq,
                              oldest_seq=r.oldest_seq, head_seq=r.head_seq, epoch=res.instance_epoch,
                              previous_epoch=previous, inline=inline, cursor=self._cursor)

    def _request(self) -> pb.SubscribeEventsRequest:
        c = self._cursor
        until = self._until
        if 0 < until <= c.seq:
            # Stopped inside commit until: ask one further, stop client-side.
            until = c.seq + 1
        req = pb.SubscribeEventsRequest(
            since_seq=c.seq, instance_epoch=c.epoch, since_fact=c.fact,
            # So that a log that gave c.seq to another commit answers with a
            # resync (reason commit_mismatch).
            since_fingerprint=c.fingerprint, topics=self._topics,
            snapshot=cast(Any, self._snapshot), on_unservable=cast(Any, self._on_unservable), until_seq=until,
            end_at_head=self._end_at_head,
        )
        if self._since_time is not None and c.seq == 0 and not self._time_spent:
            ts = timestamp_pb2.Timestamp()
            ts.FromDatetime(self._since_time.astimezone(_dt.timezone.utc).replace(tzinfo=None))
            req.since_time.CopyFrom(ts)
        return req

    def _bound_reached(self) -> bool:
        u = self._until
        return u > 0 and self._cursor.seq >= u and self._cursor.fact == 0

    def _beyond_bound(self, res: pb.SubscribeEventsResponse) -> bool:
        """A positioned response past the until bound (possible only when
        resuming inside commit u, which asks until u+1): everything up to u
        is covered, so the cursor moves to (u, 0)."""
        u = self._until
        if u == 0 or res.seq <= u:
            return False
        cur = self._cursor
        if cur.epoch == res.instance_epoch and cur.seq <= u:
            # Still commit u's fingerprint when the cursor was inside it.
            self._cursor = Cursor(res.instance_epoch, u, 0, cur.fingerprint if cur.seq == u else 0)
        return True

    def _switched_epoch(self, res: pb.SubscribeEventsResponse) -> bool:
        """A positioned response of another epoch than the (non-zero) cursor's, with no resync before it."""
        return self._cursor.seq != 0 and res.instance_epoch != self._cursor.epoch


def _option(v: str | int | None, names: Mapping[str, int], what: str) -> int:
    if v is None:
        return 0
    if isinstance(v, str):
        if v not in names:
            raise ValueError(f"ringcast: {what} {v!r}: want one of {', '.join(names)}")
        return names[v]
    if isinstance(v, int) and not isinstance(v, bool) and v in names.values():
        return v
    raise ValueError(f"ringcast: {what} {v!r}: want one of {', '.join(names)}")

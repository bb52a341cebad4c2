"""Client: one server, its codec, credentials and backoff, for every call."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping, Sequence

import httpx

from ._gen.ringcast.v1 import ringcast_pb2 as pb
from .backoff import Backoff
from .connect import Transport
from .cursor import Cursor
from .publish import FactInit, PublishOutcome, outcome, publish, publish_batch, to_fact
from .subscribe import ConnectionEvent, OnUnservableName, SnapshotName, Subscription, TokenSource

class Client:
    """A ringcast server at base_url (http:// or https://), over the
    Connect protocol with the binary codec (codec="proto", the default) or
    JSON (codec="json").

    token: a bearer token for a server with --auth jwt, or a function
    returning one, called before every subscribe (re)connect and call, so
    it can hand out a fresh token each time. A subscription whose stream
    the server ends because its token expired reconnects at once with a
    fresh token and resumes from its cursor (once per expiry: a token
    expired again before the stream was healthy is retried after the
    backoff; a fresh token refused at once ends the iteration).
    """

    def __init__(
        self,
        base_url: str,
        *,
        codec: str = "proto",
        token: TokenSource | None = None,
        headers: Mapping[str, str] | None = None,
        backoff: Backoff | None = None,
        timeout_s: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.transport = Transport(base_url, codec=codec, headers=headers, timeout_s=timeout_s, http=http)
        self._token = token
        self._backoff = backoff

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _auth(self) -> dict[str, str]:
        if self._token is None:
            return {}
        tok = self._token if isinstance(self._token, str) else self._token()
        return {"Authorization": f"Bearer {tok}"}

    def subscribe(
        self,
        *,
        cursor: Cursor | str | None = None,
        topics: Sequence[str] = (),
        snapshot: SnapshotName | int | None = None,
        on_unservable: OnUnservableName | int | None = None,
        until_seq: int = 0,
        end_at_head: bool = False,
        since_time: _dt.datetime | None = None,
        backoff: Backoff | None = None,
        idle_timeout_ms: float | None = None,
        on_connection: Callable[[ConnectionEvent], None] | None = None,
    ) -> Subscription:
        """A resumable subscription (see Subscription); nothing is sent until iteration starts.

        cursor: where to resume (a Cursor or its string; default: nothing
        consumed, a snapshot first). topics: a fact matches an entry equal to
        its topic or a prefix of it ending at "/". snapshot: what a start from
        nothing (or a resync) delivers first, "retained" (the server's
        default) or "latest_per_key". on_unservable: "resync_terminal" (the
        default: resubscribe from the zero cursor) or "snapshot_inline" (the
        snapshot follows on the same stream); either way one resynced signal
        comes first. until_seq: end once that position is consumed.
        end_at_head: end after caught_up. since_time: start with every
        retained commit whose event time is at or after it instead of a
        snapshot, while the subscription has no position (a saved cursor
        wins; after a resync it starts from a snapshot). idle_timeout_ms: a
        stream silent this long is reconnected (None or 0: 3 heartbeat
        intervals plus 1 s, 45 s until the server announced one; negative:
        no check).
        """
        return Subscription(
            self.transport, cursor=cursor, topics=topics, snapshot=snapshot, on_unservable=on_unservable,
            until_seq=until_seq, end_at_head=end_at_head, since_time=since_time, token=self._token,
            backoff=backoff or self._backoff, idle_timeout_ms=idle_timeout_ms, on_connection=on_connection,
        )

    def publish(
        self,
        facts: Iterable[FactInit],
        *,
        idempotency_key: str | None = None,
        attempts: int | None = None,
        confirm_by_outcome: bool = False,
        backoff: Backoff | None = None,
    ) -> pb.PublishResponse:
        """Appends one commit, retried safely under one idempotency key (see ringcast.publish)."""
        return publish(self.transport, facts, idempotency_key=idempotency_key, attempts=attempts,
                       backoff=backoff or self._backoff, headers=self._auth(), confirm_by_outcome=confirm_by_outcome)

    def publish_batch(self, commits: Sequence[pb.PublishRequest | Iterable[FactInit]]) -> list[pb.PublishResponse]:
        """Appends several commits in one request (all or none), one receipt each; no retries."""
        reqs = [c if isinstance(c, pb.PublishRequest) else pb.PublishRequest(facts=[to_fact(f) for f in c]) for c in commits]
        return publish_batch(self.transport, reqs, headers=self._auth())

    def outcome(self, idempotency_key: str) -> PublishOutcome:
        """What became of the publish sent with idempotency_key (GetPublishOutcome)."""
        return outcome(self.transport, idempotency_key, headers=self._auth())

    def status(self) -> pb.GetServerStatusResponse:
        """The running instance: epoch, window, head and oldest seq, state, limits (GetServerStatus)."""
        return self.transport.unary("GetServerStatus", pb.GetServerStatusRequest(), pb.GetServerStatusResponse,
                                    headers=self._auth())



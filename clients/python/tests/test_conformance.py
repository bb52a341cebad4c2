"""The shared client spec (clients/conformance): every vector runs through a
scripted Connect server, in both codecs; every backoff.json case through
Backoff.resolve; defaults.json is what the client's constants say. The Go
and TypeScript clients run the same files."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

import ringcast
from ringcast import _defaults, pb
from ringcast.items import StreamItem

from conftest import CONFORMANCE
from scripted import ScriptedServer

VECTORS = sorted((CONFORMANCE / "vectors").glob("*.json"))
#: The files of clients/conformance a test here reads (a new one fails test_every_file_is_read).
READ = {"backoff.json", "cursors.json", "defaults.json", "retry-after.json"} | {f"vectors/{p.name}" for p in VECTORS}


def load(p: Path) -> dict[str, Any]:
    return json.loads(p.read_text(encoding="utf-8"))


def item_json(item: StreamItem, cursor: str) -> dict[str, Any]:
    m: dict[str, Any] = {"kind": item.kind, "epoch": str(item.epoch), "cursor": cursor}
    if item.kind == "fact":
        m.update(seq=str(item.seq), index=item.index, last=item.last)
        if item.traceparent:
            m["traceparent"] = item.traceparent
    elif item.kind == "caught_up":
        m["headSeq"] = str(item.head_seq)
    else:
        m.update(reason=f"REASON_{item.reason_name}", inline=item.inline)
    return m


def request_json(r: pb.SubscribeEventsRequest) -> dict[str, Any]:
    return json_format.MessageToDict(r, including_default_value_fields=True)


class Run:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.end = "finished"
        self.cursor = ""
        self.requests: list[pb.SubscribeEventsRequest] = []
        self.next: pb.SubscribeEventsRequest | None = None
        self.reconnects: list[str] = []


def run(v: dict[str, Any], cursor: str | None, stop_after: int, codec: str) -> Run:
    out = Run()
    o = v.get("options") or {}
    with ScriptedServer(v["streams"]) as srv, ringcast.Transport(srv.url, codec=codec) as t:
        connects = 0
        waited = False

        def on_connection(ev: ringcast.ConnectionEvent) -> None:
            nonlocal connects, waited
            if ev.state == "reconnecting":
                waited = True
            if ev.state != "connecting":
                return
            if connects > 0:
                out.reconnects.append("backoff" if waited else "at_once")
            connects += 1
            waited = False

        since = None
        if o.get("sinceTime"):
            import datetime as dt

            since = dt.datetime.fromisoformat(o["sinceTime"].replace("Z", "+00:00"))
        sub = ringcast.Subscription(
            t, cursor=cursor, topics=o.get("topics", ()), until_seq=int(o.get("untilSeq", "0")),
            end_at_head=bool(o.get("endAtHead")), snapshot=o.get("snapshot"),
            on_unservable="snapshot_inline" if o.get("snapshotInline") else None, since_time=since,
            backoff=ringcast.Backoff(min_ms=1, initial_ms=2, max_ms=20), on_connection=on_connection,
        )

        def consume() -> None:
            try:
                for item in sub:
                    out.items.append(item_json(item, sub.cursor_string()))
                    if stop_after > 0 and len(out.items) == stop_after:
                        out.end = "stopped"
                        break
            except ringcast.ConnectError as e:
                out.end = "reconnect" if srv.next is not None else f"error:{e.code}"

        th = threading.Thread(target=consume, daemon=True)
        th.start()
        th.join(30)  # hang guard
        assert not th.is_alive(), f"vector {v['name']}: the iteration neither ended nor reconnected after {out.items}"
        out.cursor = sub.cursor_string()
        out.requests = list(srv.requests)
        out.next = srv.next
    return out


@pytest.mark.parametrize("codec", ringcast.connect.CODECS)
@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_vector(path: Path, codec: str) -> None:
    v = load(path)
    e = v["expect"]
    r = run(v, (v.get("options") or {}).get("cursor"), v.get("stopAfterItems", 0), codec)
    assert r.items == e["items"], "items"
    assert r.end == e["end"], "end"
    assert r.cursor == e["cursor"], "cursor"
    if "reconnects" in e:
        assert r.reconnects == e["reconnects"], "reconnects"
    for i, s in enumerate(v["streams"]):
        if i < len(r.requests):
            assert request_json(r.requests[i]) == s["request"], f"request {i}"
        else:
            assert e["end"] != "reconnect", f"stream {i} was never requested"
    if e["end"] == "reconnect":
        assert r.next is not None, "no next request"
        assert request_json(r.next) == e["nextRequest"], "next request"
    if e["end"] == "stopped":
        again = run({**v, "streams": []}, r.cursor, 0, codec)
        assert again.next is not None, "no request from the persisted cursor"
        assert request_json(again.next) == e["nextRequest"], "request from the persisted cursor"


def test_has_vectors() -> None:
    assert len(VECTORS) > 10


BACKOFF = load(CONFORMANCE / "backoff.json")["cases"]


@pytest.mark.parametrize("case", BACKOFF, ids=[c["name"] for c in BACKOFF])
def test_backoff_bounds(case: dict[str, Any]) -> None:
    g = case["given"]
    b = ringcast.Backoff(min_ms=g.get("minMs"), initial_ms=g.get("initialMs"), max_ms=g.get("maxMs"),
                         reset_ms=g.get("resetMs")).resolve()
    assert {"minMs": b.min_ms, "initialMs": b.initial_ms, "maxMs": b.max_ms, "resetMs": b.reset_ms} == case["want"]


def test_defaults_are_the_shared_ones() -> None:
    d = load(CONFORMANCE / "defaults.json")
    ours = {
        "backoff": {"minMs": _defaults.BACKOFF_MIN_MS, "initialMs": _defaults.BACKOFF_INITIAL_MS,
                    "maxMs": _defaults.BACKOFF_MAX_MS, "resetMs": _defaults.BACKOFF_RESET_MS},
        "retryAfterCapMs": _defaults.RETRY_AFTER_CAP_MS,
        "idleTimeout": {"heartbeatMultiple": _defaults.IDLE_HEARTBEAT_MULTIPLE, "graceMs": _defaults.IDLE_GRACE_MS,
                        "untilHeartbeatKnownMs": _defaults.IDLE_UNTIL_HEARTBEAT_KNOWN_MS},
        "permanentCodes": list(_defaults.PERMANENT_CODES),
        "tokenExpiredMessage": _defaults.TOKEN_EXPIRED_MESSAGE,
        "publish": {"attempts": _defaults.PUBLISH_ATTEMPTS,
                    "idempotencyKeyPrefix": _defaults.PUBLISH_IDEMPOTENCY_KEY_PREFIX,
                    "idempotencyKeyRandomBytes": _defaults.PUBLISH_IDEMPOTENCY_KEY_RANDOM_BYTES},
    }
    assert ours == d, "clients/python/src/ringcast/_defaults.py differs from clients/conformance/defaults.json"


def test_every_file_is_read() -> None:
    """A file added to clients/conformance fails here until a Python test runs it."""
    files = {str(p.relative_to(CONFORMANCE)) for p in CONFORMANCE.rglob("*.json")}
    assert sorted(files - READ) == [], "conformance files no Python test reads"


RETRY_AFTER = load(CONFORMANCE / "retry-after.json")["cases"]


@pytest.mark.parametrize("case", RETRY_AFTER, ids=[repr(c["header"]) for c in RETRY_AFTER])
def test_retry_after_reads_as_shared(case: dict[str, Any]) -> None:
    def refusal(code: str) -> ringcast.ConnectError:
        return ringcast.ConnectError(code, "x", ringcast.Metadata([("Retry-After", case["header"])]))

    assert ringcast.retry_after_ms(refusal("resource_exhausted")) == case["ms"]
    assert ringcast.retry_after_ms(refusal("unavailable")) == 0, "only resource_exhausted asks for a wait"


def test_retry_after() -> None:
    def refusal(code: str, value: str | None) -> ringcast.ConnectError:
        return ringcast.ConnectError(code, "x", ringcast.Metadata([("Retry-After", value)] if value is not None else []))

    assert ringcast.retry_after_ms(refusal("resource_exhausted", "3")) == 3000
    assert ringcast.retry_after_ms(refusal("resource_exhausted", "100000")) == _defaults.RETRY_AFTER_CAP_MS
    for code, value in [("unavailable", "3"), ("resource_exhausted", None), ("resource_exhausted", "0"),
                        ("resource_exhausted", "soon"), ("resource_exhausted", "-2")]:
        assert ringcast.retry_after_ms(refusal(code, value)) == 0, (code, value)
    assert ringcast.retry_after_ms(None) == 0


def test_backoff_delay_within_bounds() -> None:
    b = ringcast.Backoff(min_ms=50, initial_ms=100, max_ms=1000).resolve()
    for n in range(50):
        ceiling = min(1000, 100 * 2**n)
        assert b.delay_ms(n, lambda: 0) == 50
        assert 50 <= b.delay_ms(n, lambda: 0.999999) <= ceiling

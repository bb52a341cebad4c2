"""The client against real `ringcast serve` processes on loopback: resuming
mid-commit from a cursor file, cursors that name their commit (a
fingerprint from another log resyncs), a resync after a restart,
since_time, publish retries under one key, a key reused with other facts
refused at once, Retry-After, GetPublishOutcome."""

from __future__ import annotations

import datetime as dt
import queue
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

import ringcast
from ringcast import pb

from conftest import Server, memory_fingerprint

CODECS = ringcast.connect.CODECS
FAST = ringcast.Backoff(min_ms=2, initial_ms=10, max_ms=100)


def facts(*topics: str, type: str = "x.n", **data: Any) -> list[dict[str, Any]]:
    return [{"topic": t, "type": type, "key": f"k{i}", "data": {**data, "i": i}} for i, t in enumerate(topics)]


def read_to_head(c: ringcast.Client, **kw: Any) -> tuple[list[ringcast.StreamItem], ringcast.Subscription]:
    sub = c.subscribe(end_at_head=True, backoff=FAST, **kw)
    return list(sub), sub


@pytest.mark.parametrize("codec", CODECS)
def test_mid_commit_resume_from_a_cursor_file(start_server: Callable[..., Server], tmp_path: Path, codec: str) -> None:
    srv = start_server()
    with ringcast.Client(srv.url, codec=codec) as c:
        first = c.publish(facts("a/x", "a/x", "a/x"), idempotency_key="three")
        second = c.publish(facts("a/y"))
        cursor_file = tmp_path / "app.cursor"
        got: list[tuple[int, int]] = []
        # The first run stops after the first fact of the three-fact commit.
        for item in c.subscribe(cursor=ringcast.load_cursor(cursor_file), backoff=FAST):
            if item.kind == "fact":
                got.append((item.seq, item.index))
                ringcast.save_cursor(cursor_file, item.cursor)
                break
        assert got == [(first.seq, 0)]
        # The cursor names the commit it is inside by its fingerprint (rc2).
        assert cursor_file.read_text() == f"rc2.{srv.epoch:016x}.{first.seq}.1.{memory_fingerprint(first):08x}\n"
        # The next run, from the file, delivers the rest of that commit first, then the next one.
        items, sub = read_to_head(c, cursor=ringcast.load_cursor(cursor_file))
        rest = [(i.seq, i.index, i.last) for i in items if i.kind == "fact"]
        assert rest == [(first.seq, 1, False), (first.seq, 2, True), (second.seq, 0, True)]
        assert [i.kind for i in items][-1] == "caught_up"
        assert sub.cursor == ringcast.Cursor(srv.epoch, second.seq, 0, memory_fingerprint(second))


@pytest.mark.parametrize("codec", CODECS)
def test_a_cursor_from_another_log_resyncs(start_server: Callable[..., Server], codec: str) -> None:
    """A cursor with the server's epoch and seq whose fingerprint names
    another commit (a cursor kept across a restore of the store) is answered
    with a resync, reason COMMIT_MISMATCH, and the snapshot: nothing of the
    other log's position is carried onto these commits. The same cursor
    without a fingerprint (rc1) is served by its epoch and seq alone."""
    srv = start_server()
    with ringcast.Client(srv.url, codec=codec) as c:
        first = c.publish(facts("m/a"))
        second = c.publish(facts("m/b"))
        real = memory_fingerprint(first)
        other = ringcast.Cursor(srv.epoch, first.seq, 0, real ^ 0x5A5A5A5A)
        items, sub = read_to_head(c, cursor=str(other))
        assert [i.kind for i in items] == ["resynced", "fact", "fact", "caught_up"]
        r = items[0]
        assert (r.reason, r.reason_name, r.requested_seq, r.inline) == \
            (pb.REASON_COMMIT_MISMATCH, "COMMIT_MISMATCH", first.seq, False)
        assert r.cursor == ringcast.ZERO_CURSOR
        assert [(i.seq, i.cursor) for i in items[1:3]] == [
            (first.seq, ringcast.Cursor(srv.epoch, first.seq, 0, real)),
            (second.seq, ringcast.Cursor(srv.epoch, second.seq, 0, memory_fingerprint(second)))]
        # The right fingerprint resumes after the commit; none (rc1) as well.
        for cur in [ringcast.Cursor(srv.epoch, first.seq, 0, real), ringcast.Cursor(srv.epoch, first.seq, 0)]:
            items, _ = read_to_head(c, cursor=cur)
            assert [(i.kind, i.seq) for i in items if i.kind != "caught_up"] == [("fact", second.seq)], cur


@pytest.mark.parametrize("codec", CODECS)
def test_a_live_subscription_resyncs_after_a_restart(start_server: Callable[..., Server], codec: str) -> None:
    srv = start_server()
    old_epoch = srv.epoch
    with ringcast.Client(srv.url, codec=codec) as c:
        before = c.publish(facts("r/a"))
        got: queue.Queue[ringcast.StreamItem | BaseException] = queue.Queue()
        sub = c.subscribe(backoff=FAST)

        def consume() -> None:
            try:
                for item in sub:
                    got.put(item)
                    if item.kind == "fact" and item.type == "x.after":
                        return
            except BaseException as e:  # reported to the test
                got.put(e)

        threading.Thread(target=consume, daemon=True).start()

        def take() -> ringcast.StreamItem:
            item = got.get(timeout=60)  # hang guard
            assert not isinstance(item, BaseException), item
            return item

        first = take()
        assert first.kind == "fact" and first.seq == before.seq and first.epoch == old_epoch
        assert take().kind == "caught_up"
        srv = srv.restart()
        assert srv.epoch != old_epoch
        with ringcast.Client(srv.url, codec=codec) as c2:
            after = c2.publish(facts("r/b", type="x.after"))
        resynced = take()
        assert resynced.kind == "resynced"
        assert (resynced.reason_name, resynced.previous_epoch, resynced.epoch, resynced.inline) == \
            ("EPOCH_MISMATCH", old_epoch, srv.epoch, False)
        assert resynced.cursor == ringcast.ZERO_CURSOR
        # Then the new instance's snapshot and tail: the commit published after
        # the restart is in the snapshot, or (the resubscribe came first)
        # after an empty snapshot's caught_up.
        nxt = take()
        if nxt.kind == "caught_up":
            nxt = take()
        assert nxt.kind == "fact" and (nxt.epoch, nxt.seq, nxt.type) == (srv.epoch, after.seq, "x.after")
        assert nxt.cursor == ringcast.Cursor(srv.epoch, after.seq, 0, memory_fingerprint(after))


@pytest.mark.parametrize("codec", CODECS)
def test_since_time(start_server: Callable[..., Server], codec: str) -> None:
    srv = start_server()
    with ringcast.Client(srv.url, codec=codec) as c:
        receipts = [c.publish(facts("t/a", n=n)) for n in range(4)]
        since = receipts[2].event_time.ToDatetime().replace(tzinfo=dt.timezone.utc)
        items, _ = read_to_head(c, since_time=since)
        seqs = [i.seq for i in items if i.kind == "fact"]
        want = [r.seq for r in receipts if r.event_time.ToDatetime().replace(tzinfo=dt.timezone.utc) >= since]
        assert seqs == want and receipts[2].seq in seqs and receipts[0].seq not in seqs
        assert all(i.kind != "resynced" for i in items)


@pytest.mark.parametrize("codec", CODECS)
def test_outcome(start_server: Callable[..., Server], codec: str) -> None:
    srv = start_server()
    with ringcast.Client(srv.url, codec=codec) as c:
        r = c.publish(facts("o/a"), idempotency_key="outcome-key")
        o = c.outcome("outcome-key")
        assert o.applied and o.receipt is not None
        assert (o.receipt.seq, o.receipt.instance_epoch, o.receipt.duplicate) == (r.seq, srv.epoch, False)
        none = c.outcome("never-published")
        assert not none.applied and none.receipt is None and none.remembered_since is not None
        with pytest.raises(ringcast.ConnectError) as e:
            c.outcome("")
        assert e.value.code == "invalid_argument"


class LosingProxy:
    """Forwards Connect calls to a server, but answers the first `lose`
    PublishBatch calls with 503 after the server handled them: the commit
    is appended, its receipt lost."""

    def __init__(self, upstream: str, lose: int) -> None:
        self.keys: list[str] = []
        outer = self
        http = httpx.Client(trust_env=False)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                r = http.post(upstream + self.path, content=body, headers=headers)
                if self.path.endswith("/PublishBatch"):
                    req = pb.PublishBatchRequest()
                    if self.headers.get("content-type") == "application/json":
                        from google.protobuf import json_format

                        json_format.Parse(body.decode(), req)
                    else:
                        req.ParseFromString(body)
                    outer.keys.append(req.commits[0].idempotency_key)
                    if len(outer.keys) <= lose:
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("key", [None, "note-g-014-0600"])
def test_publish_retries_a_lost_receipt_under_one_key(start_server: Callable[..., Server], codec: str, key: str | None) -> None:
    srv = start_server()
    proxy = LosingProxy(srv.url, lose=2)
    try:
        with ringcast.Client(proxy.url, codec=codec, backoff=FAST) as c:
            r = c.publish(facts("p/a"), idempotency_key=key)
        # Three attempts, one key; the second and third found the commit appended.
        assert len(proxy.keys) == 3 and len(set(proxy.keys)) == 1
        if key is None:
            assert proxy.keys[0].startswith("rc-") and len(proxy.keys[0]) == 3 + 32
        else:
            assert proxy.keys[0] == key
        assert r.duplicate and r.instance_epoch == srv.epoch
        with ringcast.Client(srv.url, codec=codec) as c:
            items, _ = read_to_head(c)
        commits = [(i.seq, i.index) for i in items if i.kind == "fact"]
        assert commits == [(r.seq, 0)], "the lost receipt's commit was appended once"
    finally:
        proxy.close()


def test_publish_with_confirm_by_outcome_reads_instead_of_writing(start_server: Callable[..., Server]) -> None:
    srv = start_server()
    proxy = LosingProxy(srv.url, lose=1)
    try:
        with ringcast.Client(proxy.url, backoff=FAST) as c:
            r = c.publish(facts("p/a"), idempotency_key="confirm-me", confirm_by_outcome=True)
        assert proxy.keys == ["confirm-me"], "no second publish"
        assert r.duplicate and r.seq > 0
    finally:
        proxy.close()


def test_publish_stops_at_a_permanent_code(start_server: Callable[..., Server]) -> None:
    srv = start_server()
    with ringcast.Client(srv.url, backoff=FAST) as c:
        with pytest.raises(ringcast.ConnectError) as e:
            c.publish([{"topic": "Not A Topic", "type": "x"}])
        assert e.value.code == "invalid_argument" and e.value.wire


@pytest.mark.parametrize("codec", CODECS)
def test_a_key_reused_with_other_facts_is_refused_at_once(start_server: Callable[..., Server], codec: str) -> None:
    """A key names one commit: the same facts again under it return the
    original receipt (duplicate); other facts under it are refused with
    already_exists (is_key_reused), in one request, never retried, and
    nothing is appended."""
    srv = start_server()
    t = Recording(srv.url, codec=codec)

    def no_sleep(s: float) -> None:
        raise AssertionError(f"publish slept {s} s for a retry")

    try:
        first = ringcast.publish(t, facts("kr/a", "kr/b"), idempotency_key="order-7")
        again = ringcast.publish(t, facts("kr/a", "kr/b"), idempotency_key="order-7", sleep=no_sleep)
        assert not first.duplicate and again.duplicate
        assert (again.seq, again.instance_epoch, again.event_time) == (first.seq, first.instance_epoch, first.event_time)
        for other in [facts("kr/a", "kr/c"), facts("kr/a"), [*reversed(facts("kr/a", "kr/b"))],
                      facts("kr/a", "kr/b", type="x.other")]:
            t.attempts.clear()
            with pytest.raises(ringcast.ConnectError) as e:
                ringcast.publish(t, other, idempotency_key="order-7", attempts=5, backoff=FAST, sleep=no_sleep)
            assert ringcast.is_key_reused(e.value) and e.value.code == "already_exists" and e.value.wire, e.value
            assert len(t.attempts) == 1, "a reused key is not retried"
        with ringcast.Client(srv.url, codec=codec, backoff=FAST) as c:
            with pytest.raises(ringcast.ConnectError) as e:
                c.publish(facts("kr/z"), idempotency_key="order-7")
            assert ringcast.is_key_reused(e.value)
            items, _ = read_to_head(c)
        assert [(i.seq, i.topic) for i in items if i.kind == "fact"] == [(first.seq, "kr/a"), (first.seq, "kr/b")], \
            "only the first commit was appended"
        assert not ringcast.is_key_reused(ringcast.ConnectError("invalid_argument", "x"))
        assert not ringcast.is_key_reused(ValueError("already_exists"))
        assert not ringcast.is_key_reused(None)
    finally:
        t.close()


def test_a_key_with_control_characters_or_edge_whitespace_is_refused(start_server: Callable[..., Server]) -> None:
    srv = start_server()
    t = Recording(srv.url)
    try:
        for key in ["k\x01", "k\x7f", "k\u0085x", " k", "k ", "\tk", "k\u00a0", "k\u2003"]:
            t.attempts.clear()
            with pytest.raises(ringcast.ConnectError) as e:
                ringcast.publish(t, facts("kk/a"), idempotency_key=key, backoff=FAST)
            assert e.value.code == "invalid_argument" and e.value.wire and len(t.attempts) == 1, (key, e.value)
        # Inner whitespace is part of a key, and a generated key is always valid.
        assert ringcast.publish(t, facts("kk/a"), idempotency_key="k 1").seq > 0
        assert ringcast.publish(t, facts("kk/a")).seq > 0
    finally:
        t.close()


class Recording(ringcast.Transport):
    """A transport that records each PublishBatch attempt's refusal and its Retry-After."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.attempts: list[ringcast.ConnectError | None] = []

    def unary(self, method: str, *a: Any, **kw: Any) -> Any:
        if method != "PublishBatch":
            return super().unary(method, *a, **kw)
        try:
            r = super().unary(method, *a, **kw)
        except ringcast.ConnectError as e:
            self.attempts.append(e)
            raise
        self.attempts.append(None)
        return r


def test_publish_waits_for_retry_after(start_server: Callable[..., Server]) -> None:
    srv = start_server("--publish-rate", "1", "--publish-burst", "1")
    t = Recording(srv.url)
    slept: list[float] = []
    import time

    def sleep(s: float) -> None:
        slept.append(s)
        time.sleep(s)

    try:
        for _ in range(10):
            # Empty the bucket: single requests until one is refused.
            for _ in range(10):
                try:
                    ringcast.publish(t, facts("rl/a"), attempts=1)
                except ringcast.ConnectError as e:
                    assert e.code == "resource_exhausted"
                    break
            t.attempts.clear()
            slept.clear()
            r = ringcast.publish(t, facts("rl/a"), attempts=2, backoff=ringcast.Backoff(min_ms=1, initial_ms=1, max_ms=1),
                                 sleep=sleep)
            if t.attempts[0] is None:
                continue  # the allowance refilled before it: empty it again
            refusal = t.attempts[0]
            assert refusal.code == "resource_exhausted"
            wait = ringcast.retry_after_ms(refusal)
            assert wait >= 1000, f"refusal carried Retry-After {refusal.metadata.get('retry-after')!r}"
            assert slept == [wait / 1000], "the retry waited the Retry-After, not the 1 ms backoff"
            assert t.attempts[1:] == [None] and r.seq > 0
            return
        pytest.fail("no publish was refused in 10 rounds")
    finally:
        t.close()


def test_a_server_that_is_not_there() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with ringcast.Client(f"http://127.0.0.1:{port}", backoff=FAST) as c:
        with pytest.raises(ringcast.ConnectError) as e:
            c.status()
        assert e.value.code == "unavailable" and e.value.network and not e.value.wire

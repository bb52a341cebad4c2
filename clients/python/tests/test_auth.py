"""The token option against a server with --auth jwt: a stream that ends at
its token's expiry resumes with a fresh token, losing and repeating
nothing; a fresh token refused at once ends the iteration; refusals are
permanent; an idempotency key belongs to its publisher."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ringcast

from conftest import Server

SECRET = "py-test-secret-0123456789abcdef-0123456789"
FAST = ringcast.Backoff(min_ms=2, initial_ms=10, max_ms=100)


def hs256(claims: dict[str, Any]) -> str:
    """A JWT signed with the test secret (any JWT library makes the same token)."""
    def b64(v: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(v).encode()).rstrip(b"=").decode()

    body = f"{b64({'alg': 'HS256', 'typ': 'JWT'})}.{b64(claims)}"
    sig = hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).digest()
    return body + "." + base64.urlsafe_b64encode(sig).rstrip(b"=").decode()


@pytest.fixture
def jwt_server(start_server: Callable[..., Server], tmp_path: Path) -> tuple[Server, Path]:
    key = tmp_path / "secret"
    key.write_text(f"hmac:{SECRET}\n")
    return start_server("--auth", "jwt", "--jwt-key-file", str(key)), key


def mint(binary: str, key: Path, sub: str, ttl: str, publish: list[str]) -> str:
    """`ringcast token` (the CLI's own tokens)."""
    args = [binary, "token", "--key-file", str(key), "--sub", sub, "--ttl", ttl]
    for t in publish:
        args += ["--publish", t]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("codec", ringcast.connect.CODECS)
def test_resumes_across_token_expiries_with_a_fresh_token(jwt_server: tuple[Server, Path], ringcast_bin: str, codec: str) -> None:
    srv, key = jwt_server
    publisher = ringcast.Client(srv.url, codec=codec, token=mint(ringcast_bin, key, "publisher", "1h", ["auth"]))
    calls = 0

    def token() -> str:
        nonlocal calls
        calls += 1
        # exp 3 s ago: the server takes it for the rest of its 5 s leeway,
        # so a stream lasts 1-2 s.
        now = int(time.time())
        return hs256({"sub": "reader", "iat": now - 4, "exp": now - 3, "ringcast": {"subscribe": ["auth/t"]}})

    reader = ringcast.Client(srv.url, codec=codec, token=token)
    published: list[str] = []
    got: list[str] = []
    kinds: set[str] = set()
    failed: list[BaseException] = []

    def consume() -> None:
        try:
            for item in reader.subscribe(topics=["auth/t"], backoff=FAST):
                kinds.add(item.kind)
                if item.kind == "fact":
                    got.append(f"{item.seq}/{item.index}" + ("$" if item.last else ""))
                    if item.type == "x.end":
                        return
        except BaseException as e:  # reported to the test
            failed.append(e)

    th = threading.Thread(target=consume, daemon=True)
    th.start()
    try:
        # Across at least two expiries (tokens live 1-2 s).
        end = time.monotonic() + 4.5
        n = 0
        while time.monotonic() < end:
            r = publisher.publish([{"topic": t, "type": "x.n", "data": {"n": n, "i": i}}
                                   for i, t in enumerate(["auth/t", "auth/other", "auth/t"])])
            published += [f"{r.seq}/0", f"{r.seq}/2$"]
            n += 1
            time.sleep(0.15)
        r = publisher.publish([{"topic": "auth/t", "type": "x.end"}])
        published.append(f"{r.seq}/0$")
        th.join(30)  # hang guard
        assert not th.is_alive(), f"the reader did not reach the end; it has {got}"
        assert not failed, failed
        assert got == published
        assert "resynced" not in kinds, "an expiry is not a resync"
        assert calls >= 2, f"token function called {calls} times, want once more after an expiry"
    finally:
        publisher.close()
        reader.close()


def test_a_fresh_token_refused_at_once_ends_the_iteration(jwt_server: tuple[Server, Path]) -> None:
    srv, _ = jwt_server
    now = int(time.time())
    # exp passed a second ago: inside the server's 5 s leeway.
    token = hs256({"sub": "reader", "iat": now - 2, "exp": now - 1, "ringcast": {"subscribe": ["*"]}})
    reconnects: list[str] = []
    connects = 0
    waited = False

    def on_connection(ev: ringcast.ConnectionEvent) -> None:
        nonlocal connects, waited
        if ev.state == "reconnecting":
            waited = True
        if ev.state != "connecting":
            return
        if connects > 0:
            reconnects.append("backoff" if waited else "at_once")
        connects += 1
        waited = False

    with ringcast.Client(srv.url, token=token) as c:
        with pytest.raises(ringcast.ConnectError) as e:
            for _ in c.subscribe(backoff=FAST, on_connection=on_connection):
                pass
    assert ringcast.is_token_expired(e.value), e.value
    # One stream served until the token was refused, one reconnect at once
    # refused outright: a count bounded by the rule, not by time.
    assert reconnects == ["at_once"]


def test_refusals_are_permanent(jwt_server: tuple[Server, Path], ringcast_bin: str) -> None:
    srv, key = jwt_server
    other = subprocess.run([ringcast_bin, "token", "--key-file", str(key), "--sub", "r", "--ttl", "1h", "--subscribe", "other"],
                           check=True, capture_output=True, text=True).stdout.strip()
    for token, code in [(other, "permission_denied"), ("garbage", "unauthenticated")]:
        calls = 0

        def source(token: str = token) -> str:
            nonlocal calls
            calls += 1
            return token

        with ringcast.Client(srv.url, token=source) as c:
            with pytest.raises(ringcast.ConnectError) as e:
                list(c.subscribe(topics=["auth/t"], backoff=FAST))
        assert e.value.code == code and not ringcast.is_token_expired(e.value)
        assert calls == 1

    def broken() -> str:
        raise OSError("identity provider down")

    with ringcast.Client(srv.url, token=broken) as c:
        with pytest.raises(ringcast.ConnectError) as e:
            list(c.subscribe())
    assert e.value.code == "unauthenticated" and "identity provider down" in e.value.message


def test_a_key_belongs_to_its_publisher(jwt_server: tuple[Server, Path], ringcast_bin: str) -> None:
    """Two publishers (tokens of other subjects) using one key publish two
    commits, neither told of the other's; each one's reuse of it with other
    facts is refused (is_key_reused), its retry gets its own receipt."""
    srv, key = jwt_server
    alice = ringcast.Client(srv.url, token=mint(ringcast_bin, key, "alice", "1h", ["keys"]))
    bob = ringcast.Client(srv.url, token=mint(ringcast_bin, key, "bob", "1h", ["keys"]))
    try:
        a = alice.publish([{"topic": "keys/a", "type": "x.n"}], idempotency_key="shared-key")
        b = bob.publish([{"topic": "keys/b", "type": "x.n"}], idempotency_key="shared-key")
        assert not a.duplicate and not b.duplicate and a.seq != b.seq
        again = alice.publish([{"topic": "keys/a", "type": "x.n"}], idempotency_key="shared-key")
        assert again.duplicate and again.seq == a.seq
        mine = bob.publish([{"topic": "keys/b", "type": "x.n"}], idempotency_key="shared-key")
        assert mine.duplicate and mine.seq == b.seq
        with pytest.raises(ringcast.ConnectError) as e:
            alice.publish([{"topic": "keys/b", "type": "x.n"}], idempotency_key="shared-key", backoff=FAST)
        assert ringcast.is_key_reused(e.value), e.value
    finally:
        alice.close()
        bob.close()

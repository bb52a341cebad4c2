"""A stream that delivers nothing for the idle timeout is treated as dead
and reconnected from the cursor."""

from __future__ import annotations

import threading

import ringcast

from scripted import ScriptedServer

COMMIT = {"seq": "5", "instanceEpoch": "4660",
          "commit": {"factCount": 1, "facts": [{"index": 0, "topic": "t/a", "type": "x", "key": "k5", "data": {"i": 0}}]}}


def test_a_silent_stream_is_reconnected_after_the_idle_timeout() -> None:
    streams = [{"responses": [], "end": "hang"}, {"responses": [COMMIT], "end": "hang"}]
    with ScriptedServer(streams) as srv, ringcast.Transport(srv.url) as t:
        errors: list[ringcast.ConnectError | None] = []

        def on_connection(ev: ringcast.ConnectionEvent) -> None:
            if ev.state == "reconnecting":
                errors.append(ev.error)

        sub = ringcast.Subscription(t, cursor="rc1.0000000000001234.4.0", idle_timeout_ms=200,
                                    backoff=ringcast.Backoff(min_ms=1, initial_ms=2, max_ms=20), on_connection=on_connection)
        got: list[ringcast.StreamItem] = []

        def consume() -> None:
            for item in sub:
                got.append(item)
                return

        th = threading.Thread(target=consume, daemon=True)
        th.start()
        th.join(30)  # hang guard
        assert not th.is_alive()
        assert [(i.kind, i.seq) for i in got if i.kind == "fact"] == [("fact", 5)]
        assert len(srv.requests) == 2 and srv.requests[1].since_seq == 4
        assert errors and errors[0] is not None and errors[0].code == "unavailable" and "idle timeout" in errors[0].message

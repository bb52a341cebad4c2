"""`python3 -m ringcast tail` against the Go CLI's `ringcast tail`: the same
lines, byte for byte, on the same server (facts of every shape, a resync
after a restart, --count inside a commit, --topic), the same cursor files
(with the commit's fingerprint; one from another log resyncs), the same
errors; SIGTERM stops between two lines, exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ringcast

from conftest import ROOT, Server, memory_fingerprint

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("RINGCAST_")},
       "PYTHONPATH": str(ROOT / "clients" / "python" / "src")}


def py_tail(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ringcast", "tail", *args], capture_output=True, env=ENV, timeout=timeout)


def go_tail(binary: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([binary, "tail", *args], capture_output=True, env=ENV, timeout=timeout)


TRICKY: list[dict[str, Any]] = [
    {"topic": "shapes/a", "type": "x.data", "key": "k1", "data": {
        "text": "<b>&\"quoted\"\\ \u2028\u2029 é ☃ 𝄞 \x01\x1f\x7f \t\n\r\b\f", "zeta": 1, "alpha": [1, 1.5, -0.0, 100, 1e21, 1e20,
        1e-6, 1e-7, 123456789.125, -3, 0.1, 2**53 + 1], "nested": {"b": None, "a": True, "c": False, "": {}},
        "empty": [], "ünï": "ok"}},
    {"topic": "shapes/b", "type": "x.bin", "binary_data": b"\x00\x01\xfe\xff binary", "content_type": "application/octet-stream"},
    {"topic": "shapes/b", "type": "x.bin", "key": "no-content-type", "binary_data": b""},
    {"topic": "shapes/c", "type": "x.empty", "data": {}},
    {"topic": "shapes/c", "type": "x.none"},
]


def compare(binary: str, tmp: Path, name: str, *args: str) -> bytes:
    """Runs both CLIs with their own copy of cursor file `name`; asserts the same output, exit and cursor."""
    go_file, py_file = tmp / f"go-{name}", tmp / f"py-{name}"
    g = go_tail(binary, "--cursor-file", str(go_file), *args)
    p = py_tail("--cursor-file", str(py_file), *args)
    assert g.returncode == 0, g.stderr.decode()
    assert (p.returncode, p.stderr.decode()) == (0, "")
    assert p.stdout.decode() == g.stdout.decode()
    assert py_file.read_text() == go_file.read_text()
    return g.stdout


def test_the_same_lines_as_the_go_cli(start_server: Callable[..., Server], ringcast_bin: str, tmp_path: Path) -> None:
    srv = start_server()
    s = ["--server", srv.url]
    with ringcast.Client(srv.url) as c:
        c.publish(TRICKY)
        c.publish([{"topic": "other/x", "type": "x.n", "data": {"n": 1}}])
        three = c.publish([{"topic": "shapes/d", "type": "x.n", "data": {"i": i}} for i in range(3)])
    out = compare(ringcast_bin, tmp_path, "all.cursor", *s, "--end-at-head")
    lines = out.decode().splitlines()
    assert len(lines) == len(TRICKY) + 1 + 3 + 1 and lines[-1].startswith('{"signal":"caught_up"')
    # A topic filter, and --count stopping inside a commit, twice: the second run continues there.
    compare(ringcast_bin, tmp_path, "shapes.cursor", *s, "--end-at-head", "--topic", "shapes/d,other")
    first = compare(ringcast_bin, tmp_path, "count.cursor", *s, "--topic", "shapes/d", "--count", "1")
    assert first.decode() == f'{{"seq":{three.seq},"index":0,"last":false,"topic":"shapes/d","type":"x.n","key":"","data":{{"i":0}},' \
        f'"time":{first.decode().split(chr(34) + "time" + chr(34) + ":")[1]}'
    assert (tmp_path / "py-count.cursor").read_text() == \
        f"rc2.{srv.epoch:016x}.{three.seq}.1.{memory_fingerprint(three):08x}\n"
    second = compare(ringcast_bin, tmp_path, "count.cursor", *s, "--topic", "shapes/d", "--count", "2")
    assert [ln.split(",")[1] for ln in second.decode().splitlines()] == ['"index":1', '"index":2']
    # A restart: the cursor files name the old epoch, so both print a resynced line, then the new snapshot.
    srv = srv.restart()
    with ringcast.Client(srv.url) as c:
        c.publish([{"topic": "shapes/e", "type": "x.after", "data": {"after": "restart"}}])
    again = compare(ringcast_bin, tmp_path, "all.cursor", "--server", srv.url, "--end-at-head")
    assert again.decode().splitlines()[0].startswith('{"signal":"resynced","reason":"epoch_mismatch",')
    # Each reads the other's cursor file.
    (tmp_path / "go-swap.cursor").write_text((tmp_path / "py-all.cursor").read_text())
    (tmp_path / "py-swap.cursor").write_text((tmp_path / "go-all.cursor").read_text())
    with ringcast.Client(srv.url) as c:
        c.publish([{"topic": "shapes/f", "type": "x.later"}])
    assert b'"type":"x.later"' in compare(ringcast_bin, tmp_path, "swap.cursor", "--server", srv.url, "--end-at-head")


def test_a_cursor_file_from_another_log(start_server: Callable[..., Server], ringcast_bin: str, tmp_path: Path) -> None:
    """A cursor file with the server's epoch and seq but another commit's
    fingerprint (kept across a restore of the store): both print a resynced
    line, reason commit_mismatch, then the snapshot, and both files then
    hold the server's own cursor; an rc1 file (no fingerprint) resumes."""
    srv = start_server()
    with ringcast.Client(srv.url) as c:
        first = c.publish([{"topic": "fp/a", "type": "x.n", "data": {"n": 1}}])
        second = c.publish([{"topic": "fp/a", "type": "x.n", "data": {"n": 2}}])
    wrong = ringcast.Cursor(srv.epoch, first.seq, 0, memory_fingerprint(first) ^ 1 or 2)
    for name in ["go-other.cursor", "py-other.cursor"]:
        ringcast.save_cursor(tmp_path / name, wrong)
    out = compare(ringcast_bin, tmp_path, "other.cursor", "--server", srv.url, "--end-at-head").decode().splitlines()
    assert out[0] == f'{{"signal":"resynced","reason":"commit_mismatch","requested_seq":{first.seq},"oldest_seq":1,' \
        f'"head_seq":{second.seq},"inline":false}}'
    assert [ln[:len('{"seq":N')] for ln in out[1:3]] == [f'{{"seq":{first.seq}', f'{{"seq":{second.seq}']
    assert (tmp_path / "py-other.cursor").read_text() == \
        f"rc2.{srv.epoch:016x}.{second.seq}.0.{memory_fingerprint(second):08x}\n"
    for name in ["go-old.cursor", "py-old.cursor"]:
        (tmp_path / name).write_text(f"rc1.{srv.epoch:016x}.{first.seq}.0\n")
    out = compare(ringcast_bin, tmp_path, "old.cursor", "--server", srv.url, "--end-at-head").decode().splitlines()
    assert len(out) == 2 and out[0].startswith(f'{{"seq":{second.seq},') and out[1].startswith('{"signal":"caught_up"')


def test_the_same_errors_as_the_go_cli(ringcast_bin: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.cursor"
    bad.write_text("rc1.not-a-cursor\n")
    # Flags may follow arguments (and "--" ends them); a --server without a
    # value still needs one.
    for args, code in [(["--bogus"], 2), (["--count", "x"], 2), (["--count", "-1"], 1), (["--server"], 2),
                       (["--server", "localhost:8080"], 1), (["--server", "ftp://h"], 1), (["extra"], 2),
                       (["extra", "--bogus"], 2), (["extra", "--count", "1"], 2), (["--", "--count"], 2),
                       (["--since", "15m", "--since-time", "2026-12-01T09:00:00Z"], 1), (["--since", "soon"], 1),
                       (["--since-time", "yesterday"], 1), (["--snapshot", "all"], 1), (["--end-at-head=maybe"], 2)]:
        g, p = go_tail(ringcast_bin, *args), py_tail(*args)
        assert (p.returncode, g.returncode) == (code, code), (args, p.stderr, g.stderr)
        assert p.stderr.decode().splitlines()[0] == g.stderr.decode().splitlines()[0], args
    g = go_tail(ringcast_bin, "--cursor-file", str(bad))
    p = py_tail("--cursor-file", str(bad))
    assert (p.returncode, g.returncode) == (1, 1)
    assert str(bad) in p.stderr.decode() and p.stdout == b""
    # Nothing listening: both say so, and exit 1 at once.
    import socket

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sk.getsockname()[1]}"
    g, p = go_tail(ringcast_bin, "--server", url), py_tail("--server", url)
    want = f"ringcast tail: cannot reach a ringcast server at {url}: "
    assert (p.returncode, g.returncode) == (1, 1)
    assert g.stderr.decode().startswith(want) and p.stderr.decode().startswith(want), (g.stderr, p.stderr)


def test_sigterm_stops_between_two_lines_exactly_once(start_server: Callable[..., Server], tmp_path: Path) -> None:
    srv = start_server()
    with ringcast.Client(srv.url) as c:
        published = [(c.publish([{"topic": "sig/a", "type": "x.n", "data": {"n": n}}]).seq, 0) for n in range(50)]
    cursor = tmp_path / "sig.cursor"
    proc = subprocess.Popen([sys.executable, "-m", "ringcast", "tail", "--server", srv.url, "--cursor-file", str(cursor)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # it is running
    assert first.startswith(b'{"seq":')
    proc.send_signal(signal.SIGTERM)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [first, *rest.splitlines(keepends=True)]
    import json

    seen = [(json.loads(ln)["seq"], json.loads(ln)["index"]) for ln in lines if b'"seq"' in ln]
    # The cursor saved is the last line's: the next run prints the next fact.
    nxt = py_tail("--server", srv.url, "--cursor-file", str(cursor), "--end-at-head")
    assert nxt.returncode == 0, nxt.stderr
    more = [(json.loads(ln)["seq"], json.loads(ln)["index"]) for ln in nxt.stdout.splitlines() if b'"seq"' in ln]
    assert seen + more == published


def test_a_stream_that_ends_before_its_first_message(ringcast_bin: str) -> None:
    from scripted import ScriptedServer

    for end in ["ok", "unavailable", "permission_denied"]:
        # One stream each: without --retry, the first one that fails ends the command.
        with ScriptedServer([{"request": {}, "responses": [], "end": end}] * 2) as srv:
            g = go_tail(ringcast_bin, "--server", srv.url)
            p = py_tail("--server", srv.url)
            assert len(srv.requests) == 2, end
        assert (p.returncode, g.returncode) == (1, 1), end
        assert p.stderr.decode() == g.stderr.decode(), end

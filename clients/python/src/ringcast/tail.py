"""`python3 -m ringcast tail`: the Go CLI's `ringcast tail`, with the same
flags and the same output, one JSON line per fact and per signal, so a
script can switch between them without changing what it parses."""

from __future__ import annotations

import base64
import datetime as _dt
import os
import re
import signal
import time
from typing import IO, cast

from . import _gojson
from ._flags import FlagSet, HelpRequested, UsageError
from .client import Client
from .cursor import Cursor
from .cursorfile import load_cursor, remove_cursor_temps, save_cursor
from .errors import ConnectError
from .items import StreamItem
from .subscribe import ConnectionEvent, SnapshotName

SYNOPSIS = """tail [flags]

Subscribes and prints one JSON object per line: one per fact, and one per
lifecycle signal. Fact lines:
  {"seq":12,"index":0,"last":true,"topic":"…","type":"…","key":"…","data":{…},"time":"…"}
(binary payloads as "binary_data" in base64 with "content_type"). Signal
lines carry "signal" and never "topic" or "type":
  {"signal":"caught_up","head_seq":12}
  {"signal":"resynced","reason":"epoch_mismatch","requested_seq":40,"oldest_seq":1,"head_seq":3,"inline":false}
seq values are JSON numbers (exact up to 2^53); epochs never appear as
numbers. The output is `ringcast tail`'s (the Go CLI), line for line.

With --cursor-file the cursor is saved (atomically, synced) after every
line, so a later run continues with the next fact:
  - SIGINT/SIGTERM: exactly once. tail stops between two lines, saves the
    cursor of the last line written and exits 0; the next run prints the
    next fact.
  - SIGKILL (or a crash, or power loss): at least once, with at most one
    line repeated (the line written before its cursor was saved).
  - Temporary files of a save interrupted by a kill (.NAME.tmpDIGITS next to
    the cursor file) are removed when the next run starts.
The cursor file is the one the Go CLI reads and writes.

--since-time 2026-12-01T09:00:00Z (RFC 3339) or --since 15m (that long
before now) starts with every retained commit whose event time is at or
after that time, instead of a snapshot, then tails. They exclude each other
and a --cursor-file that holds a position.

The Python client speaks the Connect protocol only (--protocol connect)."""

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class _Stop(BaseException):
    """SIGINT or SIGTERM: stop between two lines."""


class _FirstFailed(Exception):
    def __init__(self, err: Exception) -> None:
        super().__init__(str(err))
        self.err = err


def flags() -> FlagSet:
    fs = FlagSet("tail", SYNOPSIS)
    fs.add("server", "string", "http://127.0.0.1:8080", "ringcast server URL, with its scheme: http:// or https://")
    fs.add("token", "string", "", "bearer token, when the server requires auth")
    fs.add("protocol", "string", "connect", "wire protocol: connect (the Python client speaks connect only)")
    fs.add("retry", "bool", False, "when no ringcast answers the first request (nothing listening yet, a network error, "
           "unavailable), keep trying with backoff until one does or the command is interrupted; without it the "
           "command exits 1 at once, saying why")
    fs.add("cursor-file", "string", "", "load the cursor from this file at start and save it after every line "
           "(missing file: start from a snapshot)")
    fs.add("count", "int", 0, "stop after this many facts (0: no limit); the cursor is saved")
    fs.add("topic", "list", [], "topic filter (repeatable or comma-separated); a prefix matches at a / boundary")
    fs.add("snapshot", "string", "retained", "what a fresh subscription receives first: retained or latest_per_key")
    fs.add("until", "uint", 0, "end after position SEQ (0: no bound)")
    fs.add("end-at-head", "bool", False, "replay what is there, then end instead of tailing")
    fs.add("snapshot-inline", "bool", False, "ask for an unservable cursor's snapshot on the same stream (Gap) "
           "instead of a resync round trip")
    fs.add("since-time", "string", "", "start with the commits whose event time is at or after this RFC 3339 time "
           "(e.g. 2026-12-01T09:00:00Z) instead of a snapshot")
    fs.add("since", "string", "", "start with the commits of this long before now (a Go duration, e.g. 15m or 2h) "
           "instead of a snapshot")
    return fs


def check_server_url(raw: str) -> None:
    """An http:// or https:// URL with a host; no scheme is assumed."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(raw)
        ok = u.scheme in ("http", "https") and bool(u.netloc)
    except ValueError:
        ok = False
    if ok:
        return
    if "://" not in raw:
        raise ValueError(f"--server {_gojson.string(raw)} has no scheme: want a URL such as http://{raw} (or https://)")
    raise ValueError(f"--server {_gojson.string(raw)}: want an http:// or https:// URL with a host, such as http://127.0.0.1:8080")


def parse_since(since_time: str, since: str, now: float) -> _dt.datetime | None:
    if since_time and since:
        raise ValueError("--since-time and --since are two ways to give the start: use one")
    if since_time:
        m = _RFC3339.fullmatch(since_time)
        bad = ValueError(f"--since-time {_gojson.string(since_time)}: want an RFC 3339 time such as 2026-12-01T09:00:00Z")
        if m is None:
            raise bad
        y, mo, d, h, mi, s, frac, zone = m.groups()
        tz = _dt.timezone.utc
        if zone not in ("Z", "z"):
            sign = 1 if zone[0] == "+" else -1
            tz = _dt.timezone(sign * _dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        if int(y) < 1:
            raise ValueError(f"--since-time {_gojson.string(since_time)}: want a year in 0001..9999")
        try:
            t = _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s),
                             int((frac or ".0")[1:7].ljust(6, "0")), tzinfo=tz)
        except ValueError:
            raise bad from None
        return t
    if since:
        secs = parse_duration(since)
        if secs is None or secs <= 0:
            raise ValueError(f"--since {_gojson.string(since)}: want a positive duration such as 15m or 2h")
        return _dt.datetime.fromtimestamp(now - secs, _dt.timezone.utc)
    return None


def parse_duration(s: str) -> float | None:
    """A Go duration ("1h30m", "250ms") in seconds, or None."""
    body = s[1:] if s[:1] in "+-" else s
    if not body:
        return None
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return -total if s.startswith("-") else total


def explain(err: Exception, server: str) -> str:
    """A request no ringcast answered, in one line that says so; a server's own error as it is."""
    if not isinstance(err, ConnectError) or err.wire or err.code in ("canceled", "deadline_exceeded") and not err.network:
        return str(err)
    msg = " ".join(err.message.split())
    if err.network:
        return f"cannot reach a ringcast server at {server}: {msg}"
    return f"{server} answered, but not as a ringcast server speaking connect (is --server right?): {msg}"


def fact_line(it: StreamItem) -> bytes:
    """One item as the Go CLI writes it, with its newline."""
    if it.kind == "fact":
        f = it.fact
        fields = [("seq", str(it.seq)), ("index", str(it.index)), ("last", "true" if it.last else "false"),
                  ("topic", _gojson.string(f.topic)), ("type", _gojson.string(f.type)), ("key", _gojson.string(f.key))]
        payload = f.WhichOneof("payload")
        if payload == "data":
            fields.append(("data", _gojson.value(f.data)))
        elif payload == "binary_data":
            fields.append(("binary_data", _gojson.string(base64.b64encode(f.binary_data).decode("ascii"))))
            if f.content_type:
                fields.append(("content_type", _gojson.string(f.content_type)))
        if it.event_time_ns is not None and it.event_time_ns != -62135596800 * 10**9:
            fields.append(("time", _gojson.string(rfc3339_nano(it.event_time_ns))))
        text = _gojson.obj(fields)
    elif it.kind == "caught_up":
        text = _gojson.obj([("signal", '"caught_up"'), ("head_seq", str(it.head_seq))])
    else:
        text = _gojson.obj([("signal", '"resynced"'), ("reason", _gojson.string(it.reason_name.lower())),
                            ("requested_seq", str(it.requested_seq)), ("oldest_seq", str(it.oldest_seq)),
                            ("head_seq", str(it.head_seq)), ("inline", "true" if it.inline else "false")])
    return (text + "\n").encode("utf-8")


def rfc3339_nano(ns: int) -> str:
    """Go's time.RFC3339Nano in UTC: the fraction without trailing zeros, none when zero."""
    secs, frac = divmod(ns, 10**9)
    t = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=secs)
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.year < 1000:
        s = f"{t.year:04d}" + s[s.index("-"):]
    if frac:
        s += "." + f"{frac:09d}".rstrip("0")
    return s + "Z"


def run(args: list[str], stdout: IO[bytes], stderr: IO[str]) -> int:
    fs = flags()
    try:
        rest = fs.parse(args)
    except HelpRequested:
        stderr.write(fs.usage())
        return 0
    except UsageError as e:
        stderr.write(f"{e}\n{fs.usage()}")
        return 2
    except ValueError as e:
        stderr.write(f"ringcast tail: {e}\n")
        return 1
    if rest:
        stderr.write(f"ringcast tail: unexpected arguments {_go_list(rest)}\n")
        return 2
    try:
        return _tail(fs, stdout, stderr)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as the Go CLI does;
        # the line it did not take has no cursor saved.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except _FirstFailed as e:
        stderr.write(f"ringcast tail: {explain(e.err, fs['server'])}\n")
        return 1
    except (ValueError, OSError, ConnectError) as e:
        stderr.write(f"ringcast tail: {e}\n")
        return 1


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(_gojson.string(s) for s in items) + "]"


def _tail(fs: FlagSet, stdout: IO[bytes], stderr: IO[str]) -> int:
    count: int = fs["count"]
    if count < 0:
        raise ValueError("--count must not be negative")
    snap = fs["snapshot"].lower().replace("-", "_") or "retained"
    if snap not in ("retained", "latest_per_key"):
        raise ValueError(f"--snapshot {_gojson.string(fs['snapshot'])}: want retained or latest_per_key")
    start = parse_since(fs["since-time"], fs["since"], time.time())
    server: str = fs["server"]
    check_server_url(server)
    if fs["protocol"] != "connect":
        raise ValueError(f"--protocol {_gojson.string(fs['protocol'])}: the Python client speaks connect only")
    cursor_file: str = fs["cursor-file"]
    cur = Cursor()
    if cursor_file:
        cur = load_cursor(cursor_file)
        remove_cursor_temps(cursor_file)
    if start is not None and cur.seq != 0:
        raise ValueError(f"--since-time/--since start at a time, but {cursor_file} holds a position ({cur}) to "
                         "resume from: drop one of them")
    retry: bool = fs["retry"]
    opened = False

    def on_connection(ev: ConnectionEvent) -> None:
        nonlocal opened
        if ev.state == "open":
            opened = True
        elif ev.state == "reconnecting" and not opened:
            err: Exception = ev.error if ev.error is not None else RuntimeError(
                f"{server} ended the stream before its first message (is --server a ringcast server?)")
            if not retry:
                raise _FirstFailed(err)
            if ev.attempt == 0:
                stderr.write(f"ringcast tail: {explain(err, server)}; retrying (--retry)\n")
                stderr.flush()

    client = Client(server, token=fs["token"] or None)
    sub = client.subscribe(cursor=cur, snapshot=cast(SnapshotName, snap), topics=fs["topic"], until_seq=fs["until"],
                           end_at_head=fs["end-at-head"],
                           on_unservable="snapshot_inline" if fs["snapshot-inline"] else None,
                           since_time=start, on_connection=on_connection)

    def save(c: Cursor) -> None:
        if cursor_file:
            save_cursor(cursor_file, c)

    # Between receiving an item and saving its cursor, a signal waits: tail
    # stops between two lines. Elsewhere (waiting for the network) it stops at once.
    critical = False
    pending = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal pending
        if critical:
            pending = True
        else:
            raise _Stop()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    last = cur  # the cursor of the last line written
    facts = 0
    try:
        try:
            for it in sub:
                critical = True
                line = fact_line(it)
                stdout.write(line)
                stdout.flush()
                save(it.cursor)
                last = it.cursor
                critical = False
                if pending:
                    raise _Stop()
                if it.kind == "fact":
                    facts += 1
                    if 0 < count <= facts:
                        break
        except _Stop:
            save(last)
            return 0
        except ConnectError as e:
            if not opened:
                raise _FirstFailed(e) from None
            save(sub.cursor if not critical else last)
            raise
        # The subscription's cursor also covers Progress received after the
        # last line (filtered commits), so the next run need not re-cover them.
        save(sub.cursor)
        return 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        client.close()


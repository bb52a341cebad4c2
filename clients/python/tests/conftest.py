"""Shared test fixtures: the repository, and real ringcast servers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
CONFORMANCE = ROOT / "clients" / "conformance"
os.environ.setdefault("RINGCAST_PYTHON_TESTS", "1")


import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

import pytest

_SERVING = re.compile(r'msg="ringcast serving".*\burl=(\S+).*\bepoch=([0-9a-f]{16})')


def _build() -> str:
    """The ringcast binary: RINGCAST_BIN, or a build of server/cmd/ringcast."""
    given = os.environ.get("RINGCAST_BIN")
    if given:
        return given
    d = tempfile.mkdtemp(prefix="ringcast-python-test-")
    out = os.path.join(d, "ringcast")
    subprocess.run(["go", "build", "-o", out, "./server/cmd/ringcast"], cwd=ROOT, check=True)
    return out


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum ringcast's fingerprints are made of."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def memory_fingerprint(receipt: object) -> int:
    """The fingerprint a memory server gives the commit of a publish receipt
    (docs/protocol.md, "Positions"): the CRC-32C of its seq and event time in
    Unix nanoseconds, 8 bytes each, big-endian; 1 when that is 0."""
    seq = receipt.seq  # type: ignore[attr-defined]
    t = receipt.event_time  # type: ignore[attr-defined]
    ns = t.seconds * 1_000_000_000 + t.nanos
    return crc32c(seq.to_bytes(8, "big") + (ns % (1 << 64)).to_bytes(8, "big")) or 1


@pytest.fixture(scope="session")
def ringcast_bin() -> Iterator[str]:
    b = _build()
    yield b
    if not os.environ.get("RINGCAST_BIN"):
        shutil.rmtree(os.path.dirname(b), ignore_errors=True)


class Server:
    """A `ringcast serve` on loopback (port 0: one of its own)."""

    def __init__(self, binary: str, flags: list[str], port: int = 0, registry: list["Server"] | None = None) -> None:
        self.binary = binary
        self.flags = flags
        self.registry = registry if registry is not None else []
        self.registry.append(self)
        deadline = time.monotonic() + 15
        while True:
            try:
                self._start(port)
                return
            except RuntimeError as e:
                # A port a server ran on before may still be in use for a moment.
                if port == 0 or "address already in use" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.15)

    def _start(self, port: int) -> None:
        self.proc = subprocess.Popen([self.binary, "serve", "--addr", f"127.0.0.1:{port}", *self.flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.logs: list[str] = []
        found: list[tuple[str, int]] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.logs.append(line)
                m = _SERVING.search(line)
                if m and not found:
                    found.append((m.group(1).strip('"'), int(m.group(2), 16)))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(30)  # hang guard
        if not found:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("ringcast serve did not start:\n" + "".join(self.logs))
        self.url, self.epoch = found[0]
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> "Server":
        """Stops this server and starts one on its port (a memory store: a new epoch, nothing kept)."""
        self.stop()
        return Server(self.binary, self.flags, self.port, self.registry)


@pytest.fixture
def start_server(ringcast_bin: str) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(*flags: str) -> Server:
        return Server(ringcast_bin, ["--demo=false", *flags], registry=started)

    yield start
    for s in started:
        s.stop()


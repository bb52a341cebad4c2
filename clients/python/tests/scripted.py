"""A scripted Connect server on loopback: each SubscribeEvents gets the
next stream of a conformance vector (its responses, then its end), in the
codec the request came in."""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format

from ringcast import pb

PATH = "/ringcast.v1.EventService/SubscribeEvents"


class ScriptedServer:
    def __init__(self, streams: list[dict[str, Any]]) -> None:
        self.streams = streams
        self.requests: list[pb.SubscribeEventsRequest] = []
        self.next: pb.SubscribeEventsRequest | None = None
        self.lock = threading.Lock()
        self.closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer._serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        ctype = h.headers.get("content-type", "")
        if h.path != PATH or ctype not in ("application/connect+proto", "application/connect+json"):
            h.send_error(404)
            return
        codec = ctype.rsplit("+", 1)[1]
        body = h.rfile.read(int(h.headers.get("content-length", "0")))
        flags, n = struct.unpack(">BI", body[:5])
        req = pb.SubscribeEventsRequest()
        if codec == "json":
            json_format.Parse(body[5:5 + n].decode(), req)
        else:
            req.ParseFromString(body[5:5 + n])
        with self.lock:
            self.requests.append(req)
            i = len(self.requests) - 1
            script = self.streams[i] if i < len(self.streams) else None
            if script is None and self.next is None:
                self.next = req
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def chunk(data: bytes) -> None:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        def end(error: dict[str, str] | None) -> None:
            payload = json.dumps({"error": error} if error else {}).encode()
            chunk(struct.pack(">BI", 2, len(payload)) + payload)
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()

        try:
            if script is None:
                # The runner stops here: a permanent error ends the iteration.
                end({"code": "failed_precondition", "message": "next request seen"})
                return
            for r in script["responses"]:
                m = json_format.ParseDict(r, pb.SubscribeEventsResponse())
                data = json_format.MessageToJson(m, indent=None).encode() if codec == "json" else m.SerializeToString()
                chunk(struct.pack(">BI", 0, len(data)) + data)
            e = script["end"]
            if e == "hang":
                self._wait_for_close(h.connection)
                h.close_connection = True
            elif e == "ok":
                end(None)
            else:
                end({"code": e, "message": script.get("message", "scripted end")})
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    def _wait_for_close(self, conn: socket.socket) -> None:
        """Stays open until the client closes the connection (or the server closes)."""
        while not self.closing.is_set():
            r, _, _ = select.select([conn], [], [], 0.05)
            if r:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return
                except OSError:
                    return
                return  # a new request on this connection: not expected, end the stream

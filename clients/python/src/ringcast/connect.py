"""The Connect protocol over HTTP/1.1 (httpx): unary calls and
server-streaming calls in the enveloped stream framing, with the binary
("proto") or JSON codec."""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

import httpx
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from .errors import CODES, ConnectError, Metadata

#: The service every method belongs to.
SERVICE = "ringcast.v1.EventService"

M = TypeVar("M", bound=Message)

#: Connect's mapping of an HTTP status without a Connect error body to a code.
_HTTP_CODES = {400: "internal", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented",
               429: "unavailable", 502: "unavailable", 503: "unavailable", 504: "unavailable"}

_END_STREAM = 0x02
_COMPRESSED = 0x01
#: The largest message this client accepts (the server's own limits are far below).
_MAX_MESSAGE = 64 << 20

CODECS = ("proto", "json")


class Transport:
    """Connect calls to one server: base_url is the server's http:// or
    https:// URL; codec "proto" (binary, the default) or "json"."""

    def __init__(
        self,
        base_url: str,
        *,
        codec: str = "proto",
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        if codec not in CODECS:
            raise ValueError(f"ringcast: codec {codec!r}: want one of {', '.join(CODECS)}")
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"ringcast: server URL {base_url!r}: want an http:// or https:// URL with a host")
        self.base_url = str(base_url).rstrip("/")
        self.codec = codec
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self._own = http is None
        self._http = http if http is not None else httpx.Client(trust_env=False)

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # codecs

    def _encode(self, msg: Message) -> bytes:
        if self.codec == "json":
            return json_format.MessageToJson(msg, indent=None).encode("utf-8")
        return msg.SerializeToString()

    def _decode(self, data: bytes, cls: type[M]) -> M:
        m = cls()
        try:
            if self.codec == "json":
                json_format.Parse(data.decode("utf-8"), m, ignore_unknown_fields=True)
            else:
                m.ParseFromString(data)
        except (DecodeError, json_format.ParseError, UnicodeDecodeError, ValueError) as e:
            raise ConnectError("internal", f"decode {cls.__name__}: {e}") from e
        return m

    def _url(self, method: str) -> str:
        return f"{self.base_url}/{SERVICE}/{method}"

    def _headers(self, content_type: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        h = {"Content-Type": content_type, "Connect-Protocol-Version": "1", "User-Agent": "ringcast-python"}
        h.update(self.headers)
        if extra:
            h.update(extra)
        return h

    # calls

    def unary(self, method: str, req: Message, cls: type[M], *, headers: Mapping[str, str] | None = None,
              timeout_s: float | None = None) -> M:
        """One unary call: the response, or a ConnectError."""
        t = self.timeout_s if timeout_s is None else timeout_s
        h = self._headers(f"application/{self.codec}", headers)
        if t is not None and t > 0:
            h["Connect-Timeout-Ms"] = str(max(1, int(t * 1000)))
        try:
            r = self._http.post(self._url(method), content=self._encode(req), headers=h, timeout=t)
        except httpx.TimeoutException as e:
            raise ConnectError("deadline_exceeded", f"{method}: {e or 'timed out'}", network=True) from e
        except httpx.HTTPError as e:
            raise ConnectError("unavailable", f"{method}: {e}", network=True) from e
        meta = Metadata(r.headers.multi_items())
        if r.status_code != 200:
            raise _http_error(r.status_code, r.headers.get("content-type", ""), r.content, meta)
        return self._decode(r.content, cls)

    def server_stream(self, method: str, req: Message, cls: type[M], *, headers: Mapping[str, str] | None = None,
                      idle_timeout_s: float | None = None) -> "Stream[M]":
        """Opens a server-streaming call. Iterating the Stream yields its
        messages and raises ConnectError when it ends with an error (a read
        that waits longer than idle_timeout_s is one: unavailable). Close
        it to end the call early."""
        h = self._headers(f"application/connect+{self.codec}", headers)
        body = self._encode(req)
        timeout = httpx.Timeout(self.timeout_s, read=idle_timeout_s)
        request = self._http.build_request("POST", self._url(method), content=_envelope(0, body), headers=h, timeout=timeout)
        try:
            resp = self._http.send(request, stream=True)
        except httpx.TimeoutException as e:
            raise ConnectError("unavailable", f"{method}: {e or 'timed out'}", network=True) from e
        except httpx.HTTPError as e:
            raise ConnectError("unavailable", f"{method}: {e}", network=True) from e
        return Stream(self, resp, cls, method)


class Stream(Generic[M]):
    """The messages of one server-streaming call."""

    def __init__(self, t: Transport, resp: httpx.Response, cls: type[M], method: str) -> None:
        self._t = t
        self._resp = resp
        self._cls = cls
        self._method = method
        self.headers = Metadata(resp.headers.multi_items())

    def close(self) -> None:
        self._resp.close()

    def __iter__(self) -> Iterator[M]:
        r = self._resp
        try:
            if r.status_code != 200:
                try:
                    body = r.read()
                except httpx.HTTPError:
                    body = b""
                raise _http_error(r.status_code, r.headers.get("content-type", ""), body, self.headers)
            ctype = r.headers.get("content-type", "")
            if not ctype.startswith(f"application/connect+{self._t.codec}"):
                raise ConnectError("unknown", f"{self._method}: the answer's content type is {ctype!r}, "
                                   f"not application/connect+{self._t.codec}")
            compression = r.headers.get("connect-content-encoding", "identity")
            buf = bytearray()
            chunks = r.iter_raw()
            while True:
                while len(buf) >= 5:
                    flags = buf[0]
                    (n,) = struct.unpack(">I", bytes(buf[1:5]))
                    if n > _MAX_MESSAGE:
                        raise ConnectError("resource_exhausted", f"{self._method}: a message of {n} bytes")
                    if len(buf) < 5 + n:
                        break
                    data = bytes(buf[5:5 + n])
                    del buf[:5 + n]
                    if flags & _COMPRESSED:
                        if compression != "gzip":
                            raise ConnectError("internal", f"{self._method}: a compressed message ({compression!r})")
                        data = gzip.decompress(data)
                    if flags & _END_STREAM:
                        self._end(data)
                        return
                    yield self._t._decode(data, self._cls)
                try:
                    chunk = next(chunks)
                except StopIteration:
                    raise ConnectError("unavailable", f"{self._method}: the stream ended without its end message") from None
                buf += chunk
        except httpx.TimeoutException as e:
            raise ConnectError("unavailable", f"{self._method}: no message within the idle timeout", network=True) from e
        except httpx.HTTPError as e:
            raise ConnectError("unavailable", f"{self._method}: {e}", network=True) from e
        finally:
            r.close()

    def _end(self, data: bytes) -> None:
        try:
            end = json.loads(data.decode("utf-8")) if data else {}
        except (UnicodeDecodeError, ValueError) as e:
            raise ConnectError("internal", f"{self._method}: a malformed end of stream: {e}") from e
        meta = Metadata(self.headers.items())
        for k, vs in (end.get("metadata") or {}).items():
            meta.extend((k, v) for v in vs)
        err = end.get("error")
        if err is not None:
            raise ConnectError(str(err.get("code", "unknown")), str(err.get("message", "")), meta, wire=True)


def _envelope(flags: int, data: bytes) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def _http_error(status: int, ctype: str, body: bytes, meta: Metadata) -> ConnectError:
    """The error of a non-200 answer: a Connect error body's code and
    message, or the code Connect maps the HTTP status to."""
    if ctype.startswith("application/json"):
        try:
            e = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            e = None
        if isinstance(e, dict) and isinstance(e.get("code"), str) and e["code"] in CODES:
            return ConnectError(e["code"], str(e.get("message", "")), meta, wire=True)
    text = " ".join(body.decode("utf-8", "replace").split())[:200]
    return ConnectError(_HTTP_CODES.get(status, "unknown"), f"HTTP {status}" + (f": {text}" if text else ""), meta)

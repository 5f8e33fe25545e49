"""The sans-IO core shared by Client and AsyncClient.

It knows the wire format (docs/protocol.md, TRL dialect: one JSON object per line)
and nothing of sockets: requests go out as bytes, bytes come in and are
turned into events. It numbers requests, matches replies to them, turns
error envelopes into typed exceptions, and routes exec.output/exec.exit
notifications to the stream that owns them. It also holds a tiny HTTP/1.1
response parser for the asyncio HTTP transport.

Ordering: on one connection the daemon writes an exec.stream reply before
the stream's first notification, so registering the stream's route while
handling the reply (as ``receive`` does, in order) never misses one.
"""

import itertools
import json
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import ProtocolError, TrlError, error_from_wire

#: Largest single message accepted from the daemon (it caps its own at 16 MiB
#: of request; output notifications are far smaller).
MAX_LINE = 64 << 20


class Result(dict):
    """A method's data: a dict whose keys are also attributes (``r.stdout``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):  # pragma: no cover - convenience for REPLs
        return list(self.keys()) + list(super().__dir__())


def wrap(v: Any) -> Any:
    """Turn nested dicts of a reply into Results (lists are walked too)."""
    if isinstance(v, dict):
        return Result((k, wrap(x)) for k, x in v.items())
    if isinstance(v, list):
        return [wrap(x) for x in v]
    return v


class Reply:
    """The answer to one request: ``data`` when ok, else ``error``."""

    __slots__ = ("id", "data", "error", "stream_id")

    def __init__(self, id: Any, data: Any, error: Optional[TrlError], stream_id: Optional[str] = None):
        self.id = id
        self.data = data
        self.error = error
        #: Set when the reply opened a stream whose notifications now route.
        self.stream_id = stream_id

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.data


class Chunk:
    """One exec.output notification: ``data`` written to ``stream``."""

    __slots__ = ("stream_id", "stream", "data", "seq", "offset", "lost_bytes")

    def __init__(self, params: Dict[str, Any]):
        self.stream_id = params.get("stream_id")
        self.stream = params.get("stream", "stdout")
        self.data = params.get("data", "")
        self.seq = params.get("seq", 0)
        self.offset = params.get("offset", 0)
        #: Bytes the daemon dropped before this chunk (the reader fell
        #: behind the stream's window); 0 normally.
        self.lost_bytes = params.get("lost_bytes", 0)

    def __repr__(self) -> str:
        return "Chunk(%s, seq=%d, %r)" % (self.stream, self.seq, self.data)


class StreamEvent:
    """A notification routed to a stream: a Chunk, the exit (a Result), or
    a wait for terminal input (``waiting``: exec.waiting's ``input``, with
    ``kind`` and ``prompt``)."""

    __slots__ = ("stream_id", "chunk", "exit", "waiting")

    def __init__(self, stream_id: str, chunk: Optional[Chunk] = None, exit: Optional[Result] = None,
                 waiting: Optional[Result] = None):
        self.stream_id = stream_id
        self.chunk = chunk
        self.exit = exit
        self.waiting = waiting


Event = Union[Reply, StreamEvent]


class Protocol:
    """One connection's protocol state. Not thread-safe: one owner feeds it."""

    def __init__(self, max_line: int = MAX_LINE):
        self._ids = itertools.count(1)
        self._buf = bytearray()
        self._max = max_line
        self._pending: Dict[str, bool] = {}  # request id -> opens a stream
        self._routes: Dict[str, bool] = {}  # stream ids whose notifications we take
        # Streams closed before their exit: the daemon still sends their
        # notifications on this connection until the exit, so a second
        # subscription here would get both.
        self._abandoned: Dict[str, bool] = {}

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, stream: bool = False) -> Tuple[str, bytes]:
        """Encode a request; ``stream`` marks one whose reply opens a stream."""
        rid = "py-%d" % next(self._ids)
        msg: Dict[str, Any] = {"id": rid, "method": method}
        if params:
            msg["params"] = params
        self._pending[rid] = stream
        return rid, (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")

    def forget(self, rid: str) -> None:
        """Drop a request no one waits for any more (its reply is ignored)."""
        self._pending.pop(rid, None)

    def following(self, stream_id: Optional[str]) -> bool:
        """Whether the daemon sends this stream's notifications here now."""
        return stream_id in self._routes or stream_id in self._abandoned

    def close_route(self, stream_id: str) -> None:
        if self._routes.pop(stream_id, None) is not None:
            self._abandoned[stream_id] = True

    def receive(self, data: bytes) -> List[Event]:
        """Feed bytes read from the daemon; returns the complete messages' events."""
        self._buf += data
        events: List[Event] = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self._max:
                    raise ProtocolError("a message from the daemon is longer than %d bytes" % self._max)
                return events
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            ev = self._message(line)
            if ev is not None:
                events.append(ev)

    def eof(self) -> List[Event]:
        """The daemon closed the connection: a last unterminated message counts."""
        if not self._buf.strip():
            self._buf.clear()
            return []
        return self.receive(b"\n")

    def pending(self) -> List[str]:
        return list(self._pending)

    def _message(self, line: bytes) -> Optional[Event]:
        line = line.strip()
        if line.startswith(b"data:"):  # a server-sent event's data line
            line = line[5:].strip()
        if not line:
            return None
        try:
            msg = json.loads(line)
        except ValueError as e:
            raise ProtocolError("the daemon sent a line that is not JSON: %s" % e) from None
        if not isinstance(msg, dict):
            raise ProtocolError("the daemon sent JSON that is not an object")
        if "id" not in msg:
            return self._notification(msg)
        rid = msg.get("id")
        opens = self._pending.pop(rid, False) if isinstance(rid, str) else False
        if msg.get("ok") is True:
            data = wrap(msg.get("data") or {})
            sid = None
            if opens and isinstance(data, dict) and isinstance(data.get("stream_id"), str):
                sid = data["stream_id"]
                self._routes[sid] = True
            return Reply(rid, data, None, sid)
        if "error" in msg:
            return Reply(rid, None, error_from_wire(msg["error"]))
        raise ProtocolError("the daemon sent a reply with neither ok nor error: %.200s" % line)

    def _notification(self, msg: Dict[str, Any]) -> Optional[Event]:
        params = msg.get("params")
        if not isinstance(params, dict):
            return None
        sid = params.get("stream_id")
        method = msg.get("method")
        if sid not in self._routes:
            if method == "exec.exit":
                self._abandoned.pop(sid, None)
            return None  # a stream no one here follows any more
        if method == "exec.output":
            return StreamEvent(sid, chunk=Chunk(params))
        if method == "exec.exit":
            del self._routes[sid]
            return StreamEvent(sid, exit=wrap(params))
        if method == "exec.waiting":
            return StreamEvent(sid, waiting=wrap(params.get("input") or {}))
        return None


def params(**kw: Any) -> Dict[str, Any]:
    """A params object from keyword arguments, leaving out the ones that are None."""
    return {k: v for k, v in kw.items() if v is not None}


def session_id_params(session_id: Optional[str], exec_id: Optional[str]) -> Dict[str, Any]:
    return params(session_id=session_id, exec_id=exec_id)


# ---- HTTP -----------------------------------------------------------------


def http_request(host: str, path: str, token: Optional[str], body: bytes, stream: bool) -> bytes:
    """Encode one HTTP/1.1 POST (the connection closes after the response)."""
    lines = [
        "POST %s HTTP/1.1" % path,
        "Host: %s" % host,
        "Content-Type: application/json",
        "Content-Length: %d" % len(body),
        "Accept: %s" % ("application/x-ndjson" if stream else "application/json"),
        "Connection: close",
        "User-Agent: trl-client-python",
    ]
    if token:
        lines.append("Authorization: Bearer %s" % token)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class HTTPResponseParser:
    """Incremental HTTP/1.1 response parser: feed bytes, get body bytes.

    Handles Content-Length, chunked transfer coding and close-delimited
    bodies, which is all the daemon's net/http server sends.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.status: Optional[int] = None
        self.headers: Dict[str, str] = {}
        self._remaining: Optional[int] = None  # body bytes left (Content-Length)
        self._chunked = False
        self._chunk_left = 0
        self._state = "head"  # head, body, chunk-size, chunk-data, chunk-crlf, trailer, done
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self._buf += data
        out = bytearray()
        while True:
            if self._state == "head":
                end = self._buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buf) > 1 << 16:
                        raise ProtocolError("HTTP response headers too long")
                    return bytes(out)
                head = bytes(self._buf[:end]).decode("latin-1").split("\r\n")
                del self._buf[: end + 4]
                parts = head[0].split(" ", 2)
                if len(parts) < 2 or not parts[0].startswith("HTTP/"):
                    raise ProtocolError("not an HTTP response: %.100r" % head[0])
                self.status = int(parts[1])
                for h in head[1:]:
                    k, _, v = h.partition(":")
                    self.headers[k.strip().lower()] = v.strip()
                if "chunked" in self.headers.get("transfer-encoding", "").lower():
                    self._chunked, self._state = True, "chunk-size"
                else:
                    cl = self.headers.get("content-length")
                    self._remaining = int(cl) if cl is not None else None
                    self._state = "body"
                    if self._remaining == 0 or self.status in (204, 304):
                        self._state, self.done = "done", True
            elif self._state == "body":
                if self._remaining is None:
                    out += self._buf
                    self._buf.clear()
                    return bytes(out)
                take = min(self._remaining, len(self._buf))
                out += self._buf[:take]
                del self._buf[:take]
                self._remaining -= take
                if self._remaining == 0:
                    self._state, self.done = "done", True
                return bytes(out)
            elif self._state == "chunk-size":
                nl = self._buf.find(b"\r\n")
                if nl < 0:
                    return bytes(out)
                size = bytes(self._buf[:nl]).split(b";")[0].strip()
                del self._buf[: nl + 2]
                self._chunk_left = int(size, 16)
                self._state = "chunk-data" if self._chunk_left else "trailer"
            elif self._state == "chunk-data":
                if not self._buf:
                    return bytes(out)
                take = min(self._chunk_left, len(self._buf))
                out += self._buf[:take]
                del self._buf[:take]
                self._chunk_left -= take
                if self._chunk_left == 0:
                    self._state = "chunk-crlf"
            elif self._state == "chunk-crlf":
                if len(self._buf) < 2:
                    return bytes(out)
                del self._buf[:2]
                self._state = "chunk-size"
            elif self._state == "trailer":
                nl = self._buf.find(b"\r\n")
                if nl < 0:
                    return bytes(out)
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 2]
                if not line:
                    self._state, self.done = "done", True
            else:
                self._buf.clear()
                return bytes(out)

    def eof(self) -> None:
        """The server closed; raises when the body was cut short."""
        if self._state == "body" and self._remaining is None:
            self._state, self.done = "done", True
        if not self.done:
            raise ProtocolError("the HTTP response ended early")


def split_url(url: str) -> Tuple[str, int, str, str]:
    """(host, port, base path, Host header) of an http:// URL."""
    if not url.startswith("http://"):
        raise ValueError("only http:// URLs are supported (put a TLS proxy's plain side here); got %r" % url)
    rest = url[len("http://") :]
    hostport, _, path = rest.partition("/")
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = hostport.partition(":")
    base = "/" + path.rstrip("/") if path.rstrip("/") else ""
    return host, int(port or 80), base, hostport

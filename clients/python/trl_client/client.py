"""The blocking client: ``Client`` over the Unix socket or HTTP.

Over the socket one connection carries every call; a reader thread owned by
the client feeds the sans-IO core and hands each reply to the thread that
waits for it, each notification to its stream's queue, so calls from several
threads run concurrently (a cancel is not held up by the run it cancels).
Over HTTP each call is one POST /rpc; a stream reads its NDJSON response.
"""

import http.client
import os
import queue
import socket
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import _files
from ._api import Methods, OutputCallback
from ._core import Chunk, Protocol, Reply, Result, StreamEvent, split_url
from .errors import ProtocolError, TransportError

DEFAULT_SOCKET = "/tmp/trl-default.sock"


def default_socket() -> str:
    """``$TRL_SOCKET``, else the default daemon's socket."""
    return os.environ.get("TRL_SOCKET") or DEFAULT_SOCKET


class StreamBase:
    """What Stream and AsyncStream share: ids, callbacks, the exit."""

    def __init__(self, reply: Reply, on_output: Optional[Callable[[Chunk], Any]],
                 on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback],
                 on_waiting: Optional[Callable[[Result], Any]] = None):
        data = reply.data
        #: The reply's data (stream_id, session_id; offsets for attach).
        self.info: Result = data
        self.stream_id: str = data.get("stream_id")
        self.session_id: Optional[str] = data.get("session_id")
        #: exec.exit's params once the command has ended (exit_code,
        #: duration_ms, timed_out, canceled); None before.
        self.exit: Optional[Result] = None
        #: The last wait for terminal input told (exec.waiting's ``input``:
        #: ``kind``, ``prompt``); answer it with ``input()``. None before.
        self.waiting: Optional[Result] = None
        self._on_output, self._on_stdout, self._on_stderr = on_output, on_stdout, on_stderr
        self._on_waiting = on_waiting

    def _take(self, ev: StreamEvent) -> Optional[Chunk]:
        if ev.exit is not None:
            self.exit = ev.exit
            return None
        if ev.waiting is not None:
            self.waiting = ev.waiting
            if self._on_waiting is not None:
                self._on_waiting(ev.waiting)
            return None
        c = ev.chunk
        if self._on_output is not None:
            self._on_output(c)
        if c.stream == "stderr":
            if self._on_stderr is not None:
                self._on_stderr(c.data)
        elif self._on_stdout is not None:
            self._on_stdout(c.data)
        return c


class Stream(StreamBase):
    """A running command's output: iterate for Chunks; ``wait()`` for the exit."""

    def __init__(self, client: "Client", reply: Reply, source: "_Source", *callbacks: Any):
        super().__init__(reply, *callbacks)
        self._client = client
        self._source = source

    def __iter__(self) -> Iterator[Chunk]:
        while self.exit is None:
            c = self._take(self._source.next())
            if c is not None:
                yield c
        self._source.close()

    def wait(self) -> Result:
        """Consume the rest (running callbacks) and return the exit."""
        for _ in self:
            pass
        assert self.exit is not None
        return self.exit

    def cancel(self, signal: Any = None) -> Result:
        """Signal the command (SIGINT by default)."""
        return self._client.cancel(self.session_id, signal, exec_id=self.info.get("exec_id"))

    def close(self) -> None:
        """Stop following; the command goes on (resume with attach)."""
        self._source.close()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Source:
    """Where a stream's events come from."""

    def next(self) -> StreamEvent:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Client(Methods):
    """A blocking trl client.

    ``Client()`` dials ``$TRL_SOCKET`` or /tmp/trl-default.sock;
    ``Client(socket="/path")`` another socket; ``Client(url="http://host:8765",
    token=...)`` the HTTP transport (the token defaults to
    ``$TRL_AUTH_TOKEN``). ``timeout`` bounds connecting, not commands.
    """

    def __init__(self, socket: Optional[str] = None, *, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 30.0):
        if url is not None:
            self._t: Any = _HTTPTransport(url, token if token is not None else os.environ.get("TRL_AUTH_TOKEN"), timeout)
        else:
            self._t = _UnixTransport(socket or default_socket(), timeout)

    def close(self) -> None:
        """Close the connection; streams being followed end with TransportError."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, p: Optional[Dict[str, Any]] = None, post: Optional[Callable[[Any], Any]] = None) -> Any:
        try:
            data = self._t.call(method, p).result()
        except KeyboardInterrupt:
            # Ctrl-C while a command runs interrupts the command too, as it
            # would in a terminal; the daemon would otherwise run it on.
            if method == "exec.run":
                self._cancel_quietly(p)
            raise
        return post(data) if post else data

    def _cancel_quietly(self, p: Optional[Dict[str, Any]]) -> None:
        try:
            self._t.call("exec.cancel", {"session_id": (p or {}).get("session_id") or "default"})
        except Exception:  # best effort: the interrupt is what the caller sees
            pass

    def _stream(self, method: str, p: Dict[str, Any], *callbacks: Any) -> Stream:
        reply, source = self._t.open_stream(method, p)
        reply.result()
        return Stream(self, reply, source, *callbacks)

    def upload(self, local: str, remote: str, session_id: Optional[str] = None, *, mode: Optional[str] = None) -> Result:
        """Copy the local file to ``remote`` (atomically); answers ``path``, ``size``, ``sha256``.

        ``mode`` is octal text such as ``"0640"``. Over HTTP one streamed
        PUT /files; over the socket 1 MiB pieces, moved into place at the end.
        """
        if isinstance(self._t, _HTTPTransport):
            return _files.http_upload(self._t, local, remote, session_id, mode)
        return _files.upload_chunks(self, local, remote, session_id, mode)

    def download(self, remote: str, local: str, session_id: Optional[str] = None) -> int:
        """Copy ``remote`` to the local file (replaced atomically); answers the bytes copied."""
        if isinstance(self._t, _HTTPTransport):
            return _files.http_download(self._t, remote, local, session_id)
        return _files.download_chunks(self, remote, local, session_id)


# ---- Unix socket ------------------------------------------------------------


class _Waiter:
    __slots__ = ("done", "reply", "error", "queue")

    def __init__(self) -> None:
        self.done = threading.Event()
        #: The stream's queue, made by the reader when the reply opened one.
        self.queue: "Optional[queue.Queue[Any]]" = None
        self.reply: Optional[Reply] = None
        self.error: Optional[BaseException] = None

    def get(self) -> Reply:
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


class _QueueSource(_Source):
    def __init__(self, t: "_UnixTransport", sid: str, q: "queue.Queue[Any]"):
        self._t, self._sid, self._q = t, sid, q

    def next(self) -> StreamEvent:
        ev = self._q.get()
        if isinstance(ev, BaseException):
            self._q.put(ev)  # every later next() sees it too
            raise ev
        return ev

    def close(self) -> None:
        self._t.unroute(self._sid)


class _UnixTransport:
    def __init__(self, path: str, timeout: float):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise TransportError("cannot reach trl at %s: %s (is `trl serve` running?)" % (path, e)) from e
        self._sock.settimeout(None)
        self._path = path
        self._mu = threading.Lock()  # the Protocol, the maps below, writes
        self._proto = Protocol()
        self._waiters: Dict[str, _Waiter] = {}
        self._queues: Dict[str, "queue.Queue[Any]"] = {}
        self._broken: Optional[BaseException] = None
        self._reader = threading.Thread(target=self._read, name="trl-client-reader", daemon=True)
        self._reader.start()

    def _send(self, method: str, p: Optional[Dict[str, Any]], stream: bool) -> _Waiter:
        w = _Waiter()
        with self._mu:
            if self._broken is not None:
                raise self._broken
            rid, msg = self._proto.request(method, p, stream)
            self._waiters[rid] = w
            try:
                self._sock.sendall(msg)
            except OSError as e:
                del self._waiters[rid]
                self._proto.forget(rid)
                raise TransportError("sending to trl at %s: %s" % (self._path, e)) from e
        return w

    def call(self, method: str, p: Optional[Dict[str, Any]]) -> Reply:
        return self._send(method, p, False).get()

    def open_stream(self, method: str, p: Dict[str, Any]) -> Tuple[Reply, _Source]:
        with self._mu:
            sid = p.get("stream_id") or p.get("exec_id")
            if self._proto.following(sid):
                raise ValueError("this connection already follows %s (until its exit, even once closed); "
                                 "attach from another Client" % sid)
        w = self._send(method, p, True)
        reply = w.get()
        return reply, _QueueSource(self, reply.stream_id or "", w.queue if w.queue is not None else queue.Queue())

    def unroute(self, sid: str) -> None:
        with self._mu:
            self._proto.close_route(sid)
            self._queues.pop(sid, None)

    def _read(self) -> None:
        err: BaseException = TransportError("trl closed the connection")
        try:
            while True:
                data = self._sock.recv(1 << 16)
                with self._mu:
                    events = self._proto.receive(data) if data else self._proto.eof()
                    self._dispatch(events)
                if not data:
                    break
        except ProtocolError as e:
            err = e
        except OSError as e:
            err = TransportError("reading from trl at %s: %s" % (self._path, e))
        with self._mu:
            self._broken = err
            waiters, self._waiters = self._waiters, {}
            queues, self._queues = self._queues, {}
        for w in waiters.values():
            w.error = err
            w.done.set()
        for q in queues.values():
            q.put(err)

    def _dispatch(self, events: List[Any]) -> None:
        # Called with _mu held, in arrival order: a stream's queue exists
        # before its first notification is handled.
        for ev in events:
            if isinstance(ev, Reply):
                w = self._waiters.pop(ev.id, None) if isinstance(ev.id, str) else None
                if ev.stream_id is not None:
                    q: "queue.Queue[Any]" = queue.Queue()
                    self._queues[ev.stream_id] = q
                    if w is not None:
                        w.queue = q
                if w is not None:
                    w.reply = ev
                    w.done.set()
            else:
                q = self._queues.get(ev.stream_id)
                if q is not None:
                    q.put(ev)
                    if ev.exit is not None:
                        del self._queues[ev.stream_id]

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._reader.join()
        self._sock.close()


# ---- HTTP -------------------------------------------------------------------


class _HTTPSource(_Source):
    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, proto: Protocol,
                 pending: List[Any]):
        self._conn, self._resp, self._proto, self._pending = conn, resp, proto, pending

    def next(self) -> StreamEvent:
        while not self._pending:
            try:
                line = self._resp.readline()
            except (OSError, http.client.HTTPException) as e:
                raise TransportError("reading the stream from trl: %s" % e) from e
            if not line:
                self._pending.extend(self._proto.eof())
                if not self._pending:
                    raise TransportError("trl ended the stream's response before the command's exit")
                break
            self._pending.extend(self._proto.receive(line))
        ev = self._pending.pop(0)
        if not isinstance(ev, StreamEvent):
            raise ProtocolError("unexpected reply in a stream's response")
        return ev

    def close(self) -> None:
        self._conn.close()


class _HTTPTransport:
    def __init__(self, url: str, token: Optional[str], timeout: float):
        self._host, self._port, base, self._hostport = split_url(url)
        self._path = base + "/rpc"
        self._token = token
        self._timeout = timeout

    def _post(self, body: bytes, stream: bool) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        headers = {
            "Host": self._hostport,
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson" if stream else "application/json",
            "User-Agent": "trl-client-python",
        }
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        try:
            conn.connect()
            conn.sock.settimeout(None)  # a call lasts as long as its command
            conn.request("POST", self._path, body, headers)
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError("cannot reach trl at http://%s%s: %s" % (self._hostport, self._path, e)) from e
        except BaseException:
            conn.close()
            raise

    def _first(self, proto: Protocol, resp: http.client.HTTPResponse, events: List[Any]) -> Reply:
        if not events or not isinstance(events[0], Reply):
            raise ProtocolError("trl answered HTTP %d without a reply" % resp.status)
        return events.pop(0)

    def call(self, method: str, p: Optional[Dict[str, Any]]) -> Reply:
        proto = Protocol()
        _, body = proto.request(method, p)
        conn, resp = self._post(body, False)
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("reading trl's answer: %s" % e) from e
        finally:
            conn.close()
        try:
            events = proto.receive(raw) + proto.eof()
        except ProtocolError as e:
            raise ProtocolError("trl answered HTTP %d with something else than a reply (%s): %.200r"
                                % (resp.status, e, raw)) from None
        return self._first(proto, resp, events)

    def open_stream(self, method: str, p: Dict[str, Any]) -> Tuple[Reply, _Source]:
        proto = Protocol()
        _, body = proto.request(method, p, stream=True)
        conn, resp = self._post(body, True)
        events: List[Any] = []
        try:
            while not events:
                line = resp.readline()
                if not line:
                    events = proto.eof()
                    break
                events = proto.receive(line)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError("reading trl's answer: %s" % e) from e
        except BaseException:
            conn.close()
            raise
        reply = self._first(proto, resp, events)
        if reply.error is not None:
            conn.close()
        return reply, _HTTPSource(conn, resp, proto, events)

    def close(self) -> None:
        pass

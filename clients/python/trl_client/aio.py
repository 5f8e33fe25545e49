"""The asyncio client: ``AsyncClient``, the same methods as Client, awaited.

Over the socket one connection carries every call; a reader task owned by
the client feeds the sans-IO core and resolves each call's future and each
stream's queue. Over HTTP each call is one POST /rpc on its own connection,
parsed by the core's HTTP response parser.
"""

import asyncio
import base64
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _files
from ._api import Methods
from ._core import Chunk, HTTPResponseParser, Protocol, Reply, Result, StreamEvent, http_request, split_url, wrap
from .client import StreamBase, default_socket
from .errors import ProtocolError, TransportError


class AsyncStream(StreamBase):
    """A running command's output: ``async for chunk in stream``; ``await stream.wait()``."""

    def __init__(self, client: "AsyncClient", reply: Reply, source: "_Source", *callbacks: Any):
        super().__init__(reply, *callbacks)
        self._client = client
        self._source = source

    def __aiter__(self) -> "AsyncStream":
        return self

    async def __anext__(self) -> Chunk:
        while self.exit is None:
            c = self._take(await self._source.next())
            if c is not None:
                return c
        await self._source.close()
        raise StopAsyncIteration

    async def wait(self) -> Result:
        """Consume the rest (running callbacks) and return the exit."""
        async for _ in self:
            pass
        assert self.exit is not None
        return self.exit

    async def cancel(self, signal: Any = None) -> Result:
        """Signal the command (SIGINT by default)."""
        return await self._client.cancel(self.session_id, signal, exec_id=self.info.get("exec_id"))

    async def close(self) -> None:
        """Stop following; the command goes on (resume with attach)."""
        await self._source.close()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _Source:
    async def next(self) -> StreamEvent:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class AsyncClient(Methods):
    """An asyncio trl client; create it with ``await AsyncClient.connect(...)``.

    Arguments as for Client: a socket path (default ``$TRL_SOCKET`` or
    /tmp/trl-default.sock), or ``url=`` and ``token=`` for HTTP.
    """

    def __init__(self, transport: Any):
        self._t = transport

    @classmethod
    async def connect(cls, socket: Optional[str] = None, *, url: Optional[str] = None,
                      token: Optional[str] = None, timeout: float = 30.0) -> "AsyncClient":
        if url is not None:
            return cls(_HTTPTransport(url, token if token is not None else os.environ.get("TRL_AUTH_TOKEN"), timeout))
        t = _UnixTransport(socket or default_socket())
        await t.connect(timeout)
        return cls(t)

    async def close(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _acall(self, method: str, p: Optional[Dict[str, Any]], post: Optional[Callable[[Any], Any]]) -> Any:
        try:
            data = (await self._t.call(method, p)).result()
        except asyncio.CancelledError:
            # A cancelled run interrupts its command (SIGINT) before the
            # cancellation goes on; the daemon would otherwise run it on.
            if method == "exec.run":
                try:
                    await asyncio.wait_for(
                        self._t.call("exec.cancel", {"session_id": (p or {}).get("session_id") or "default"}), 10)
                except Exception:
                    pass
            raise
        return post(data) if post else data

    def _call(self, method: str, p: Optional[Dict[str, Any]] = None, post: Optional[Callable[[Any], Any]] = None) -> Any:
        return self._acall(method, p, post)

    async def _astream(self, method: str, p: Dict[str, Any], callbacks: Tuple[Any, ...]) -> AsyncStream:
        reply, source = await self._t.open_stream(method, p)
        reply.result()
        return AsyncStream(self, reply, source, *callbacks)

    def _stream(self, method: str, p: Dict[str, Any], *callbacks: Any) -> Any:
        return self._astream(method, p, callbacks)

    async def upload(self, local: str, remote: str, session_id: Optional[str] = None, *,
                     mode: Optional[str] = None) -> Result:
        """As Client.upload: over HTTP the streamed PUT runs in a worker thread."""
        if isinstance(self._t, _HTTPTransport):
            return await asyncio.to_thread(_files.http_upload, self._t, local, remote, session_id, mode)
        tmp = _files.upload_name(remote)
        try:
            pieces = _files.pieces(local)
            while True:
                # Reading and encoding a piece runs off the event loop.
                piece = await asyncio.to_thread(next, pieces, None)
                if piece is None:
                    break
                first, data = piece
                await self.call("fs.write", _files._write_params(session_id, tmp, data, first, mode))
            size = (await self.fs_stat(tmp, session_id))["size"]
            moved = await self.fs_move(tmp, remote, session_id, overwrite=True)
        except BaseException:
            try:
                await self.fs_remove(tmp, session_id)
            except Exception:
                pass
            raise
        digest = await asyncio.to_thread(_files.sha256_of, local)
        return wrap({"path": moved["to"], "size": size, "sha256": digest})

    async def download(self, remote: str, local: str, session_id: Optional[str] = None) -> int:
        """As Client.download."""
        if isinstance(self._t, _HTTPTransport):
            return await asyncio.to_thread(_files.http_download, self._t, remote, local, session_id)
        offset = 0
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(local) + ".",
                                   dir=os.path.dirname(os.path.abspath(local)))
        try:
            with os.fdopen(fd, "wb") as f:
                while True:
                    r = await self.fs_read(remote, session_id, offset=offset, length=_files.READ_CHUNK,
                                           encoding="base64")
                    b = base64.b64decode(r["data"])
                    f.write(b)
                    offset += len(b)
                    if r["complete"]:
                        break
                    if not b:
                        raise TransportError("%s shrank while it was read" % remote)
            os.replace(tmp, local)
        except BaseException:
            os.unlink(tmp)
            raise
        return offset


# ---- Unix socket ------------------------------------------------------------


class _QueueSource(_Source):
    def __init__(self, t: "_UnixTransport", sid: str, q: "asyncio.Queue[Any]"):
        self._t, self._sid, self._q = t, sid, q

    async def next(self) -> StreamEvent:
        ev = await self._q.get()
        if isinstance(ev, BaseException):
            self._q.put_nowait(ev)
            raise ev
        return ev

    async def close(self) -> None:
        self._t.unroute(self._sid)


class _UnixTransport:
    def __init__(self, path: str):
        self._path = path
        self._proto = Protocol()
        self._futures: Dict[str, "asyncio.Future[Tuple[Reply, Any]]"] = {}
        self._queues: Dict[str, "asyncio.Queue[Any]"] = {}
        self._broken: Optional[BaseException] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._task: Optional["asyncio.Task[None]"] = None

    async def connect(self, timeout: float) -> None:
        try:
            reader, self._writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self._path, limit=1 << 20), timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise TransportError("cannot reach trl at %s: %s (is `trl serve` running?)" % (self._path, e)) from e
        self._task = asyncio.ensure_future(self._read(reader))

    async def _send(self, method: str, p: Optional[Dict[str, Any]], stream: bool) -> Tuple[Reply, Any]:
        if self._broken is not None:
            raise self._broken
        assert self._writer is not None
        rid, msg = self._proto.request(method, p, stream)
        fut: "asyncio.Future[Tuple[Reply, Any]]" = asyncio.get_running_loop().create_future()
        self._futures[rid] = fut
        try:
            self._writer.write(msg)
            await self._writer.drain()
            return await fut
        except OSError as e:
            raise TransportError("sending to trl at %s: %s" % (self._path, e)) from e
        finally:
            if self._futures.pop(rid, None) is not None:
                self._proto.forget(rid)  # cancelled before the reply came

    async def call(self, method: str, p: Optional[Dict[str, Any]]) -> Reply:
        return (await self._send(method, p, False))[0]

    async def open_stream(self, method: str, p: Dict[str, Any]) -> Tuple[Reply, _Source]:
        sid = p.get("stream_id") or p.get("exec_id")
        if self._proto.following(sid):
            raise ValueError("this connection already follows %s (until its exit, even once closed); "
                             "attach from another AsyncClient" % sid)
        reply, q = await self._send(method, p, True)
        return reply, _QueueSource(self, reply.stream_id or "", q if q is not None else asyncio.Queue())

    def unroute(self, sid: str) -> None:
        self._proto.close_route(sid)
        self._queues.pop(sid, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        err: BaseException = TransportError("trl closed the connection")
        try:
            while True:
                data = await reader.read(1 << 16)
                self._dispatch(self._proto.receive(data) if data else self._proto.eof())
                if not data:
                    break
        except ProtocolError as e:
            err = e
        except OSError as e:
            err = TransportError("reading from trl at %s: %s" % (self._path, e))
        except asyncio.CancelledError:
            err = TransportError("the client was closed")
        self._broken = err
        futures, self._futures = self._futures, {}
        queues, self._queues = self._queues, {}
        for f in futures.values():
            if not f.done():
                f.set_exception(err)
        for q in queues.values():
            q.put_nowait(err)

    def _dispatch(self, events: List[Any]) -> None:
        # In arrival order: a stream's queue exists before its first
        # notification is handled.
        for ev in events:
            if isinstance(ev, Reply):
                q = None
                if ev.stream_id is not None:
                    q = asyncio.Queue()
                    self._queues[ev.stream_id] = q
                f = self._futures.pop(ev.id, None) if isinstance(ev.id, str) else None
                if f is not None and not f.done():
                    f.set_result((ev, q))
                elif ev.stream_id is not None:
                    self.unroute(ev.stream_id)
            else:
                q = self._queues.get(ev.stream_id)
                if q is not None:
                    q.put_nowait(ev)
                    if ev.exit is not None:
                        del self._queues[ev.stream_id]

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        if self._task is not None:
            try:
                await self._task
            except asyncio.CancelledError:
                pass


# ---- HTTP -------------------------------------------------------------------


class _HTTPExchange:
    """One POST /rpc on its own connection, read message by message."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proto: Protocol):
        self._reader, self._writer, self._proto = reader, writer, proto
        self._http = HTTPResponseParser()
        self._events: List[Any] = []
        self._ended = False

    async def next_event(self) -> Any:
        while not self._events:
            if self._ended:
                return None
            try:
                data = await self._reader.read(1 << 16)
            except OSError as e:
                raise TransportError("reading trl's answer: %s" % e) from e
            if data:
                self._events.extend(self._proto.receive(self._http.feed(data)))
                if self._http.done:
                    self._events.extend(self._proto.eof())
                    self._ended = True
            else:
                self._http.eof()
                self._events.extend(self._proto.eof())
                self._ended = True
        return self._events.pop(0)

    def status(self) -> Optional[int]:
        return self._http.status

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass


class _HTTPSource(_Source):
    def __init__(self, ex: _HTTPExchange):
        self._ex = ex

    async def next(self) -> StreamEvent:
        ev = await self._ex.next_event()
        if ev is None:
            raise TransportError("trl ended the stream's response before the command's exit")
        if not isinstance(ev, StreamEvent):
            raise ProtocolError("unexpected reply in a stream's response")
        return ev

    async def close(self) -> None:
        await self._ex.close()


class _HTTPTransport:
    def __init__(self, url: str, token: Optional[str], timeout: float):
        self._host, self._port, base, self._hostport = split_url(url)
        self._path = base + "/rpc"
        self._token = token
        self._timeout = timeout

    async def _exchange(self, method: str, p: Optional[Dict[str, Any]], stream: bool) -> Tuple[Reply, _HTTPExchange]:
        proto = Protocol()
        _, body = proto.request(method, p, stream)
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(self._host, self._port), self._timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise TransportError("cannot reach trl at http://%s%s: %s" % (self._hostport, self._path, e)) from e
        ex = _HTTPExchange(reader, writer, proto)
        try:
            writer.write(http_request(self._hostport, self._path, self._token, body, stream))
            await writer.drain()
            ev = await ex.next_event()
        except BaseException:
            await ex.close()
            raise
        if not isinstance(ev, Reply):
            await ex.close()
            raise ProtocolError("trl answered HTTP %s without a reply" % ex.status())
        return ev, ex

    async def call(self, method: str, p: Optional[Dict[str, Any]]) -> Reply:
        reply, ex = await self._exchange(method, p, False)
        await ex.close()
        return reply

    async def open_stream(self, method: str, p: Dict[str, Any]) -> Tuple[Reply, _Source]:
        reply, ex = await self._exchange(method, p, True)
        if reply.error is not None:
            await ex.close()
        return reply, _HTTPSource(ex)

    async def close(self) -> None:
        pass

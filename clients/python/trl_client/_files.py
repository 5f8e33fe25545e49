"""Upload and download of local files (docs/files.md), for Client and AsyncClient.

Over HTTP a file is one streamed ``PUT /files`` or ``GET /files`` (http.client
reads and writes it in blocks; the asyncio client runs the same code in a
worker thread). Over the socket, where there is no streaming endpoint, an
upload is written in 1 MiB pieces (fs.write, then appends) to a temporary
name next to the target and moved into place with fs.move at the end, and a
download is read with fs.read chunk by chunk: atomic either way, and never
more than a chunk in memory.
"""

import base64
import hashlib
import http.client
import json
import os
import tempfile
import urllib.parse
from typing import Any, Dict, Iterator, Optional, Tuple

from ._core import Result, wrap
from .errors import TransportError, error_from_wire

CHUNK = 1 << 20
READ_CHUNK = 4 << 20


def _url(t: Any, session_id: Optional[str], path: str, **extra: Optional[str]) -> str:
    q = {"path": path}
    if session_id:
        q["session"] = session_id
    q.update({k: v for k, v in extra.items() if v is not None})
    return t._path[: -len("/rpc")] + "/files?" + urllib.parse.urlencode(q)


def _request(t: Any, method: str, url: str, body: Any = None, length: Optional[int] = None) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection(t._host, t._port, timeout=t._timeout)
    headers: Dict[str, str] = {"Host": t._hostport, "User-Agent": "trl-client-python"}
    if t._token:
        headers["Authorization"] = "Bearer " + t._token
    if length is not None:
        headers["Content-Length"] = str(length)
    try:
        conn.request(method, url, body, headers)
        resp = conn.getresponse()
    except (OSError, http.client.HTTPException) as e:
        conn.close()
        raise TransportError("cannot reach trl at http://%s/files: %s" % (t._hostport, e)) from e
    if resp.status >= 300:
        try:
            raw = resp.read(1 << 20)
        finally:
            conn.close()
        try:
            err = json.loads(raw)["error"]
        except (ValueError, KeyError, TypeError):
            err = {"code": "INTERNAL_ERROR", "message": "%s /files answered HTTP %d" % (method, resp.status)}
        raise error_from_wire(err)
    return conn, resp


def http_upload(t: Any, local: str, remote: str, session_id: Optional[str], mode: Optional[str]) -> Result:
    """PUT /files with the local file as the streamed body."""
    with open(local, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        conn, resp = _request(t, "PUT", _url(t, session_id, remote, mode=mode), f, size)
        try:
            return wrap(json.loads(resp.read())["data"])
        finally:
            conn.close()


def http_download(t: Any, remote: str, local: str, session_id: Optional[str]) -> int:
    """GET /files into a temporary file next to local, renamed at the end."""
    conn, resp = _request(t, "GET", _url(t, session_id, remote))
    try:
        return _replace(local, iter(lambda: resp.read(CHUNK), b""))
    finally:
        conn.close()


def _replace(local: str, chunks: Iterator[bytes]) -> int:
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(local) + ".", dir=os.path.dirname(os.path.abspath(local)))
    n = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for b in chunks:
                f.write(b)
                n += len(b)
        os.replace(tmp, local)
    except BaseException:
        os.unlink(tmp)
        raise
    return n


def pieces(local: str) -> Iterator[Tuple[bool, str]]:
    """(first, base64 data) of each 1 MiB piece of local; an empty file is one empty piece."""
    with open(local, "rb") as f:
        first = True
        while True:
            b = f.read(CHUNK)
            if b or first:
                yield first, base64.b64encode(b).decode("ascii")
            first = False
            if len(b) < CHUNK:
                return


def upload_name(remote: str) -> str:
    """The temporary name an upload over the socket writes to: two uploads never share one."""
    return remote + ".trl-upload-" + os.urandom(6).hex()


def sha256_of(local: str) -> str:
    h = hashlib.sha256()
    with open(local, "rb") as f:
        for b in iter(lambda: f.read(CHUNK), b""):
            h.update(b)
    return h.hexdigest()


def upload_chunks(c: Any, local: str, remote: str, session_id: Optional[str], mode: Optional[str]) -> Result:
    tmp = upload_name(remote)
    try:
        for first, data in pieces(local):
            c.call("fs.write", _write_params(session_id, tmp, data, first, mode))
        size = c.fs_stat(tmp, session_id)["size"]
        moved = c.fs_move(tmp, remote, session_id, overwrite=True)
    except BaseException:
        _forget(c, tmp, session_id)
        raise
    return wrap({"path": moved["to"], "size": size, "sha256": sha256_of(local)})


def download_chunks(c: Any, remote: str, local: str, session_id: Optional[str]) -> int:
    def chunks() -> Iterator[bytes]:
        offset = 0
        while True:
            r = c.fs_read(remote, session_id, offset=offset, length=READ_CHUNK, encoding="base64")
            b = base64.b64decode(r["data"])
            yield b
            offset += len(b)
            if r["complete"]:
                return
            if not b:
                raise TransportError("%s shrank while it was read" % remote)

    return _replace(local, chunks())


def _write_params(session_id: Optional[str], path: str, data: str, first: bool, mode: Optional[str]) -> Dict[str, Any]:
    p: Dict[str, Any] = {"path": path, "data": data, "encoding": "base64", "append": not first}
    if session_id:
        p["session_id"] = session_id
    if mode:
        p["mode"] = mode
    return p


def _forget(c: Any, tmp: str, session_id: Optional[str]) -> None:
    try:
        c.fs_remove(tmp, session_id)
    except Exception:
        pass

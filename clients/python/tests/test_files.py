"""The file methods, upload and download, against the real daemon: sync and
asyncio, over the socket and HTTP."""

import base64
import hashlib
import os
import shutil
import tempfile
import unittest

from trl_client import AsyncClient, Client, Conflict, FileNotFound, InvalidParams, NotADirectory

from .support import HTTP_URL, SOCKET, TOKEN, needs_daemon, needs_http

ALL_BYTES = bytes(range(256)) * 3


def payload() -> bytes:
    # Several 1 MiB pieces and every byte value.
    return (ALL_BYTES + os.urandom(1000)) * 3000


class FileCases:
    def connect(self) -> Client:
        raise NotImplementedError

    def setUp(self):
        self.trl = self.connect()
        self.addCleanup(self.trl.close)
        self.sid = self.trl.session_create().session_id
        self.addCleanup(self.trl.session_destroy, self.sid, True)
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_methods(self):
        self.trl.run("cd " + self.dir, self.sid)
        w = self.trl.fs_write("a/t.txt", "one\ntwo\n", self.sid)
        self.assertEqual(w["path"], os.path.join(self.dir, "a/t.txt"))
        self.assertEqual(self.trl.fs_read("a/t.txt", self.sid)["data"], "one\ntwo\n")
        self.trl.fs_write("bin", ALL_BYTES, self.sid)
        r = self.trl.fs_read("bin", self.sid)
        self.assertEqual(r["encoding"], "base64")
        self.assertEqual(base64.b64decode(r["data"]), ALL_BYTES)
        with self.assertRaises(Conflict):
            self.trl.fs_write("a/t.txt", "x", self.sid, if_sha256="0" * 64)
        with self.assertRaises(InvalidParams):
            self.trl.fs_edit("a/t.txt", "o", "0", self.sid)
        e = self.trl.fs_edit("a/t.txt", "two", "2", self.sid)
        self.assertEqual(e["lines"], [{"line": 2, "text": "2"}])
        self.trl.fs_mkdir("d/e", self.sid, parents=True)
        self.trl.fs_move("bin", "d/e/bin", self.sid)
        self.assertEqual(self.trl.fs_stat("d/e/bin", self.sid)["size"], len(ALL_BYTES))
        names = [x["name"] for x in self.trl.fs_list(None, self.sid, depth=3)["entries"]]
        self.assertEqual(names, ["a", "t.txt", "d", "e", "bin"])
        self.assertEqual(self.trl.fs_remove("d", self.sid, recursive=True)["removed"], 3)
        with self.assertRaises(FileNotFound):
            self.trl.fs_stat("d", self.sid)

    def test_upload_download(self):
        data = payload()
        local = os.path.join(self.dir, "local")
        with open(local, "wb") as f:
            f.write(data)
        remote = os.path.join(self.dir, "remote", "f")
        w = self.trl.upload(local, remote, self.sid, mode="0640")
        self.assertEqual(w["sha256"], hashlib.sha256(data).hexdigest())
        self.assertEqual(w["size"], len(data))
        with open(remote, "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(os.stat(remote).st_mode & 0o777, 0o640)
        self.assertEqual(os.listdir(os.path.dirname(remote)), ["f"])
        back = os.path.join(self.dir, "back")
        self.assertEqual(self.trl.download(remote, back, self.sid), len(data))
        with open(back, "rb") as f:
            self.assertEqual(f.read(), data)
        with self.assertRaises(FileNotFound):
            self.trl.download(os.path.join(self.dir, "missing"), back, self.sid)
        with self.assertRaises(NotADirectory):
            self.trl.upload(local, os.path.join(remote, "under"), self.sid)


@needs_daemon
class SocketFilesTest(FileCases, unittest.TestCase):
    def connect(self) -> Client:
        return Client(SOCKET)


@needs_daemon
@needs_http
class HTTPFilesTest(FileCases, unittest.TestCase):
    def connect(self) -> Client:
        return Client(url=HTTP_URL, token=TOKEN)


class AsyncFileCases:
    async def connect(self) -> AsyncClient:
        raise NotImplementedError

    async def test_upload_download_and_methods(self):
        trl = await self.connect()
        d = tempfile.mkdtemp()
        try:
            data = payload()
            local = os.path.join(d, "local")
            with open(local, "wb") as f:
                f.write(data)
            w = await trl.upload(local, os.path.join(d, "r"), mode="0600")
            self.assertEqual(w["sha256"], hashlib.sha256(data).hexdigest())
            self.assertEqual((await trl.fs_stat(os.path.join(d, "r")))["mode"], "0600")
            back = os.path.join(d, "back")
            self.assertEqual(await trl.download(os.path.join(d, "r"), back), len(data))
            with open(back, "rb") as f:
                self.assertEqual(f.read(), data)
            await trl.fs_write(os.path.join(d, "t"), "héllo")
            self.assertEqual((await trl.fs_read(os.path.join(d, "t")))["data"], "héllo")
            with self.assertRaises(FileNotFound):
                await trl.download(os.path.join(d, "missing"), back)
        finally:
            shutil.rmtree(d, True)
            await trl.close()


@needs_daemon
class SocketAsyncFilesTest(AsyncFileCases, unittest.IsolatedAsyncioTestCase):
    async def connect(self) -> AsyncClient:
        return await AsyncClient.connect(SOCKET)


@needs_daemon
@needs_http
class HTTPAsyncFilesTest(AsyncFileCases, unittest.IsolatedAsyncioTestCase):
    async def connect(self) -> AsyncClient:
        return await AsyncClient.connect(url=HTTP_URL, token=TOKEN)

"""The asyncio AsyncClient against the real daemon, over the socket and HTTP."""

import asyncio
import time
import unittest

from trl_client import AsyncClient, CommandFailed, MethodNotFound, SessionBusy, SessionNotFound, TrlError, key

from .support import HTTP_URL, SOCKET, TOKEN, needs_daemon, needs_http


class AsyncCases:
    async def connect(self) -> AsyncClient:
        raise NotImplementedError

    async def asyncSetUp(self):
        self.trl = await self.connect()
        self.sid = (await self.trl.session_create()).session_id

    async def asyncTearDown(self):
        try:
            await self.trl.session_destroy(self.sid, force=True)
        except SessionNotFound:
            pass
        await self.trl.close()

    async def test_run_and_typed_errors(self):
        await self.trl.run("cd /tmp; X=1; export X", self.sid)
        r = await self.trl.run("echo $X $(pwd); echo e >&2", self.sid)
        self.assertEqual((r.stdout, r.stderr, r.exit_code), ("1 /tmp\n", "e\n", 0))
        with self.assertRaises(CommandFailed) as cm:
            await self.trl.run("exit_with() { return 4; }; exit_with", self.sid, check=True)
        self.assertEqual(cm.exception.data["exit_code"], 4)
        with self.assertRaises(SessionNotFound):
            await self.trl.session_get("s-nosuchsession")

    async def test_sessions(self):
        s = await self.trl.session_create(name="py-async-life")
        self.assertEqual((await self.trl.session_get("py-async-life")).session_id, s.session_id)
        self.assertIn(s.session_id, [x.session_id for x in await self.trl.session_list()])
        await self.trl.session_destroy(s.session_id)
        with self.assertRaises(SessionNotFound):
            await self.trl.session_get(s.session_id)

    async def test_stream_iterates_in_order(self):
        out = []
        st = await self.trl.stream("for i in 1 2 3; do echo $i; sleep 0.05; done", self.sid, on_stdout=out.append)
        seqs = [c.seq async for c in st]
        self.assertEqual(seqs, list(range(len(seqs))))
        self.assertEqual("".join(out), "1\n2\n3\n")
        self.assertEqual(st.exit.exit_code, 0)
        again = await self.trl.attach(st.stream_id)
        self.assertEqual((await again.wait()).exit_code, 0)
        self.assertEqual((await self.trl.read(st.stream_id)).data, "1\n2\n3\n")

    async def test_cancel_a_stream(self):
        st = await self.trl.stream("echo go; sleep 30", self.sid)
        self.assertEqual((await st.__anext__()).data, "go\n")
        with self.assertRaises(SessionBusy):
            await self.trl.run("true", self.sid)
        self.assertTrue((await st.cancel("INT")).canceled)
        self.assertTrue((await st.wait()).canceled)

    async def test_gather_runs_concurrently(self):
        sids = [(await self.trl.session_create()).session_id for _ in range(3)]
        try:
            t0 = time.monotonic()
            rs = await asyncio.gather(*(self.trl.run("sleep 2; echo %d" % i, sid) for i, sid in enumerate(sids)))
            self.assertEqual([r.stdout for r in rs], ["0\n", "1\n", "2\n"])
            self.assertLess(time.monotonic() - t0, 5, "three 2 s commands in three sessions ran one by one")
        finally:
            for sid in sids:
                await self.trl.session_destroy(sid, force=True)

    async def test_cancelled_run_interrupts_the_command(self):
        task = asyncio.ensure_future(self.trl.run("sleep 30", self.sid))
        await asyncio.sleep(0.5)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        t0 = time.monotonic()
        while True:
            try:
                r = await self.trl.run("echo free", self.sid)
                break
            except SessionBusy:
                self.assertLess(time.monotonic() - t0, 10, "the cancelled command kept running")
                await asyncio.sleep(0.05)
        self.assertEqual(r.stdout, "free\n")

    async def test_ping_stats(self):
        self.assertIn("uptime_s", await self.trl.ping())
        self.assertIn("active_sessions", await self.trl.stats())

    async def test_input(self):
        try:
            await self.trl.call("exec.input", {"exec_id": "x-none", "input": ["x"]})
        except MethodNotFound as e:
            self.skipTest("the daemon does not serve exec.input yet (METHOD_NOT_FOUND: %s)" % e.message)
        except TrlError:
            pass
        r = await self.trl.run("read -r x; echo got:$x", self.sid, yield_ms=10000, timeout_s=20)
        self.assertEqual(r.state, "waiting_input", r)
        r2 = await self.trl.input(["async", key("Enter")], r.exec_id)
        self.assertIn("got:async", r2.stdout)


@needs_daemon
class SocketAsyncTest(AsyncCases, unittest.IsolatedAsyncioTestCase):
    async def connect(self):
        return await AsyncClient.connect(SOCKET)


@needs_daemon
@needs_http
class HTTPAsyncTest(AsyncCases, unittest.IsolatedAsyncioTestCase):
    async def connect(self):
        return await AsyncClient.connect(url=HTTP_URL, token=TOKEN)


if __name__ == "__main__":
    unittest.main()

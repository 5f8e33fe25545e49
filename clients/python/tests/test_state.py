"""Session state (SPEC §17) through the blocking and async clients: state,
fork, and session_create(state=...)."""

import asyncio
import json
import unittest

from trl_client import AsyncClient, Client, SessionBusy

from .support import SOCKET, needs_daemon


@needs_daemon
class StateTest(unittest.TestCase):
    def setUp(self):
        self.trl = Client(socket=SOCKET)
        self.addCleanup(self.trl.close)
        self.sid = self.trl.session_create(shell="bash").session_id
        self.addCleanup(self.trl.session_destroy, self.sid, True)

    def test_state_fork_and_carry(self):
        self.trl.run("cd /tmp; v=$'two\\nlines é'; declare -A h=([k]='v w'); f() { echo \"f:$v\"; }", self.sid)
        st = self.trl.state(self.sid)
        self.assertEqual(st["shell"], "bash")
        self.assertEqual(st["cwd"], "/tmp")
        self.assertIn("f", st["functions"])

        fork = self.trl.fork(self.sid, name="py-fork")
        self.addCleanup(self.trl.session_destroy, fork.session_id, True)
        self.assertEqual(fork["parent"], self.sid)
        self.assertEqual(self.trl.run("f; echo \"${h[k]}\"; pwd", fork.session_id).stdout, "f:two\nlines é\nv w\n/tmp\n")
        self.assertEqual(self.trl.state(fork.session_id), st)

        # Saved as JSON and carried: the state is plain data.
        saved = json.loads(json.dumps(st))
        carried = self.trl.session_create(state=saved)
        self.addCleanup(self.trl.session_destroy, carried.session_id, True)
        self.assertEqual(self.trl.run("f", carried.session_id).stdout, "f:two\nlines é\n")

        r = self.trl.run("sleep 30", self.sid, yield_ms=50)
        with self.assertRaises(SessionBusy):
            self.trl.state(self.sid)
        self.trl.cancel(exec_id=r["exec_id"])

    def test_async_state_and_fork(self):
        async def go():
            async with await AsyncClient.connect(SOCKET) as a:
                await a.run("x=async-value", self.sid)
                st = await a.state(self.sid)
                fork = await a.fork(self.sid)
                try:
                    self.assertEqual(fork["parent"], self.sid)
                    self.assertEqual((await a.run("echo $x", fork["session_id"])).stdout, "async-value\n")
                    self.assertEqual(await a.state(fork["session_id"]), st)
                finally:
                    await a.session_destroy(fork["session_id"], force=True)

        asyncio.run(go())


if __name__ == "__main__":
    unittest.main()

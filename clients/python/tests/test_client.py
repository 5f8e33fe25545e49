"""The blocking Client against the real daemon, over the socket and HTTP."""

import os
import signal
import threading
import time
import unittest

from trl_client import (AuthFailed, Client, CommandFailed, InvalidParams, SessionBusy, SessionNotFound,
                        StreamNotFound, TransportError, key)

from .support import HTTP_URL, SOCKET, TOKEN, eventually, method_or_skip, needs_daemon, needs_http, require_method


class ClientCases:
    """Every case runs over each transport (the subclasses say which)."""

    def connect(self) -> Client:
        raise NotImplementedError

    def setUp(self):
        self.trl = self.connect()
        self.addCleanup(self.trl.close)
        self.sid = self.trl.session_create().session_id
        self.addCleanup(self._destroy, self.sid)

    def _destroy(self, sid):
        try:
            self.trl.session_destroy(sid, force=True)
        except SessionNotFound:
            pass

    def test_run_keeps_state_and_splits_streams(self):
        self.trl.run("cd /tmp && export TRL_PY=kept", self.sid)
        r = self.trl.run("echo $TRL_PY $(pwd); echo err >&2; false", self.sid)
        self.assertEqual(r.stdout, "kept /tmp\n")
        self.assertEqual(r.stderr, "err\n")
        self.assertEqual(r.exit_code, 1)
        self.assertEqual(r["cwd"], "/tmp")

    def test_check_raises_command_failed_with_result(self):
        with self.assertRaises(CommandFailed) as cm:
            self.trl.run("echo partial; exit_code() { return 3; }; exit_code", self.sid, check=True)
        self.assertEqual(cm.exception.code, "COMMAND_FAILED")
        self.assertEqual(cm.exception.data["exit_code"], 3)
        self.assertEqual(cm.exception.data["stdout"], "partial\n")

    def test_invalid_params(self):
        with self.assertRaises(InvalidParams):
            self.trl.run("true", self.sid, timeout_s=-5)
        # A blank command is a shell's no-op, with status 0.
        self.assertEqual(self.trl.run("  ", self.sid)["exit_code"], 0)

    def test_sessions_create_get_list_destroy(self):
        s = self.trl.session_create(name="py-life", env={"FOO": "bar"}, working_dir="/")
        self.assertTrue(s.session_id.startswith("s-"))
        info = self.trl.session_get("py-life")
        self.assertEqual(info.session_id, s.session_id)
        self.assertEqual(info.state, "idle")
        self.assertIn(s.session_id, [x.session_id for x in self.trl.session_list()])
        self.assertEqual(self.trl.run("echo $FOO; pwd", "py-life").stdout, "bar\n/\n")
        self.assertTrue(self.trl.session_destroy(s.session_id).destroyed)
        with self.assertRaises(SessionNotFound):
            self.trl.session_get(s.session_id)

    def test_stream_in_order_with_callbacks(self):
        out, err, seqs = [], [], []
        st = self.trl.stream("for i in 1 2 3; do echo o$i; echo e$i >&2; sleep 0.05; done", self.sid,
                             on_stdout=out.append, on_stderr=err.append, on_output=lambda c: seqs.append(c.seq))
        self.assertTrue(st.stream_id.startswith("st-"))
        ex = st.wait()
        self.assertEqual(ex.exit_code, 0)
        self.assertFalse(ex.canceled)
        self.assertEqual("".join(out), "o1\no2\no3\n")
        self.assertEqual("".join(err), "e1\ne2\ne3\n")
        self.assertEqual(seqs, list(range(len(seqs))))

    def test_stream_tells_a_wait_for_input(self):
        prompts = []

        def answer(wait):
            prompts.append(wait["prompt"])
            self.trl.input("ada\r", session_id=self.sid, until=[])

        out = []
        st = self.trl.stream("printf 'name? '; read n; echo \"hello $n\"", self.sid,
                             on_stdout=out.append, on_waiting=answer)
        self.assertEqual(st.wait().exit_code, 0)
        self.assertEqual(prompts, ["name? "])
        self.assertEqual(st.waiting["kind"], "line")
        self.assertIn("hello ada\n", "".join(out))

    def test_stream_arrives_while_running(self):
        st = self.trl.stream("echo first; sleep 4; echo second", self.sid)
        t0 = time.monotonic()
        first = next(iter(st))
        self.assertEqual(first.data, "first\n")
        self.assertLess(time.monotonic() - t0, 3, "the first line waited for the command's end")
        rest = "".join(c.data for c in st)
        self.assertEqual(rest, "second\n")
        self.assertEqual(st.exit.exit_code, 0)

    def test_read_and_attach_after_the_end(self):
        st = self.trl.stream("printf 'abcdef'", self.sid)
        st.wait()
        r = self.trl.read(st.stream_id, offset=2, limit=3)
        self.assertEqual((r.data, r.offset, r.length), ("cde", 2, 3))
        again = self.trl.attach(st.stream_id, offset=1)
        self.assertEqual("".join(c.data for c in again), "bcdef")
        self.assertEqual(again.exit.exit_code, 0)
        with self.assertRaises(StreamNotFound):
            self.trl.read("st-0000000000000000")

    def test_busy_then_cancel(self):
        st = self.trl.stream("echo started; sleep 30", self.sid)
        self.assertEqual(next(iter(st)).data, "started\n")
        with self.assertRaises(SessionBusy):
            self.trl.run("true", self.sid)
        c = st.cancel()
        self.assertTrue(c.canceled)
        ex = st.wait()
        self.assertTrue(ex.canceled)
        self.assertEqual(self.trl.run("echo usable", self.sid).stdout, "usable\n")

    def test_ctrl_c_interrupts_the_command(self):
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with self.assertRaises(KeyboardInterrupt):
            self.trl.run("sleep 30", self.sid)
        timer.join()
        # The command got SIGINT: the session is free again long before 30 s.
        r = eventually(lambda: self.trl.run("echo free", self.sid))
        self.assertEqual(r.stdout, "free\n")
        self.assertLess(time.monotonic() - t0, 15)

    def test_ping_and_stats(self):
        self.assertIn("version", self.trl.ping())
        self.assertGreaterEqual(self.trl.stats().active_sessions, 1)

    def test_unknown_session(self):
        with self.assertRaises(SessionNotFound) as cm:
            self.trl.run("true", "s-nosuchsession")
        self.assertIn("s-nosuchsession", cm.exception.message)

    # ---- interactive (SPEC §8, §9) -------------------------------------

    def test_session_output_keeps_background_output(self):
        require_method(self, self.trl, "session.output", {"session_id": self.sid})
        self.trl.run("(sleep 0.3; echo from-background) &", self.sid)
        out = eventually(lambda: self._expect_in(self.trl.session_output(self.sid), "from-background"))
        self.assertGreater(out.next, 0, out)

    @staticmethod
    def _expect_in(out, text):
        if text not in out.data:
            raise AssertionError("%r not in %r" % (text, out.data))
        return out

    def test_read_renders_text(self):
        st = self.trl.stream("printf 'progress 10%%\\rprogress 100%%\\n'", self.sid)
        st.wait()
        raw = self.trl.read(st.stream_id)
        self.assertIn("\r", raw.data)
        text = self.trl.read(st.stream_id, render="text")
        self.assertEqual(text.data, "progress 100%\n")

    def test_input_answers_a_prompt(self):
        require_method(self, self.trl, "exec.input", {"exec_id": "x-none", "input": ["x"]})
        r = self.trl.run("read -r x; echo got:$x", self.sid, yield_ms=10000, timeout_s=20)
        self.assertEqual(r.state, "waiting_input", r)
        self.assertEqual(r.input["kind"], "line")
        r2 = self.trl.input(["hello", key("Enter")], r.exec_id)
        self.assertEqual(r2.state, "exited", r2)
        self.assertIn("got:hello", r2.stdout)

    def test_wait_learns_of_the_exit(self):
        require_method(self, self.trl, "exec.wait", {"exec_id": "x-none", "timeout_ms": 1})
        r = self.trl.run("sleep 0.5; echo done", self.sid, yield_ms=100, until=[], timeout_s=20)
        self.assertEqual(r.state, "running", r)
        w = self.trl.wait(r.exec_id, timeout_ms=20000)
        self.assertEqual(w.state, "exited", w)
        self.assertEqual(w.exit_code, 0)
        self.assertIn("done", w.stdout)

    def test_screen_and_resize(self):
        with method_or_skip(self, "session.resize"):
            self.trl.resize(self.sid, 30, 100)
        self.assertEqual(self.trl.run("stty size", self.sid).stdout, "30 100\n")
        require_method(self, self.trl, "session.screen", {"session_id": self.sid})
        self.trl.run("printf 'hello screen\\n'", self.sid)
        sc = self.trl.screen(self.sid)
        self.assertEqual((sc.rows, sc.cols), (30, 100))
        self.assertTrue(any("hello screen" in line for line in sc.lines), sc.lines)


@needs_daemon
class SocketClientTest(ClientCases, unittest.TestCase):
    def connect(self):
        return Client(socket=SOCKET)

    def test_calls_run_concurrently_on_one_connection(self):
        other = self.trl.session_create().session_id
        self.addCleanup(self._destroy, other)
        done = []
        t = threading.Thread(target=lambda: done.append(self.trl.run("sleep 4; echo slow", other)))
        t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        self.trl.ping()
        self.assertLess(time.monotonic() - t0, 3, "ping waited behind a running command")
        t.join()
        self.assertEqual(done[0].stdout, "slow\n")

    def test_attach_from_another_connection(self):
        st = self.trl.stream("echo one; sleep 0.3; echo two", self.sid)
        self.assertEqual(next(iter(st)).data, "one\n")
        st.close()
        # The daemon goes on sending this connection the stream until its
        # exit, so a second subscription here would see everything twice.
        with self.assertRaises(ValueError):
            self.trl.attach(st.stream_id)
        with self.connect() as other:
            again = other.attach(st.stream_id)
            self.assertEqual("".join(c.data for c in again), "one\ntwo\n")
            self.assertEqual(again.exit.exit_code, 0)
        # Once the exit has passed, this connection may attach again.
        again = eventually(lambda: self.trl.attach(st.stream_id))
        self.assertEqual("".join(c.data for c in again), "one\ntwo\n")

    def test_no_daemon_is_a_transport_error(self):
        with self.assertRaises(TransportError) as cm:
            Client(socket="/nonexistent/trl.sock")
        self.assertIn("trl serve", str(cm.exception))


@needs_daemon
@needs_http
class HTTPClientTest(ClientCases, unittest.TestCase):
    def connect(self):
        return Client(url=HTTP_URL, token=TOKEN)

    def test_wrong_token_is_auth_failed(self):
        with self.assertRaises(AuthFailed):
            Client(url=HTTP_URL, token="wrong-token").ping()


if __name__ == "__main__":
    unittest.main()

"""The sans-IO core alone: framing, routing, errors, the HTTP parser."""

import ast
import os
import unittest

from trl_client import CommandDenied, CommandFailed, ProtocolError, SessionNotFound, TrlError
from trl_client._core import HTTPResponseParser, Protocol, Reply, StreamEvent, split_url


class ProtocolTest(unittest.TestCase):
    def test_replies_match_ids_and_lines_split_anywhere(self):
        p = Protocol()
        rid, msg = p.request("system.ping")
        self.assertTrue(msg.endswith(b"\n"))
        wire = b'{"id":"%s","ok":true,"data":{"version":"x","nested":{"a":1}}}\n' % rid.encode()
        events = []
        for i in range(len(wire)):  # one byte at a time
            events += p.receive(wire[i:i + 1])
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0].id, rid)
        self.assertEqual(events[0].result().nested.a, 1)

    def test_errors_are_typed(self):
        p = Protocol()
        ev = p.receive(b'{"id":"x","ok":false,"error":{"code":"SESSION_NOT_FOUND","message":"no session"}}\n')[0]
        with self.assertRaises(SessionNotFound) as cm:
            ev.result()
        self.assertEqual(str(cm.exception), "SESSION_NOT_FOUND: no session")
        ev = p.receive(b'{"id":"y","ok":false,"error":{"code":"COMMAND_FAILED","message":"m","data":{"exit_code":2}}}\n')[0]
        with self.assertRaises(CommandFailed) as cm:
            ev.result()
        self.assertEqual(cm.exception.data["exit_code"], 2)
        ev = p.receive(b'{"id":"d","ok":false,"error":{"code":"COMMAND_DENIED","message":"m","data":{"rule":"no-rm"}}}\n')[0]
        with self.assertRaises(CommandDenied) as cm:  # was a bare TrlError
            ev.result()
        self.assertEqual(cm.exception.data["rule"], "no-rm")
        ev = p.receive(b'{"id":"z","ok":false,"error":{"code":"SOMETHING_NEW","message":"m"}}\n')[0]
        with self.assertRaises(TrlError) as cm:
            ev.result()
        self.assertEqual(cm.exception.code, "SOMETHING_NEW")

    def test_notifications_route_to_the_stream_opened_by_a_reply(self):
        p = Protocol()
        rid, _ = p.request("exec.stream", {"command": "x"}, stream=True)
        other = b'{"method":"exec.output","params":{"stream_id":"st-other","seq":0,"stream":"stdout","data":"no","offset":0}}\n'
        self.assertEqual(p.receive(other), [], "a stream nobody opened here is not routed")
        events = p.receive(
            b'{"id":"%s","ok":true,"data":{"stream_id":"st-1","session_id":"s-1"}}\n' % rid.encode()
            + b'{"method":"exec.output","params":{"stream_id":"st-1","seq":0,"stream":"stderr","data":"hi","offset":0}}\n'
            + b'{"method":"exec.exit","params":{"stream_id":"st-1","exit_code":0}}\n'
            + b'{"method":"exec.output","params":{"stream_id":"st-1","seq":1,"stream":"stdout","data":"late","offset":0}}\n')
        self.assertIsInstance(events[0], Reply)
        self.assertEqual(events[0].stream_id, "st-1")
        self.assertIsInstance(events[1], StreamEvent)
        self.assertEqual((events[1].chunk.stream, events[1].chunk.data), ("stderr", "hi"))
        self.assertEqual(events[2].exit.exit_code, 0)
        self.assertEqual(len(events), 3, "nothing is routed after the exit")

    def test_a_closed_stream_counts_as_followed_until_its_exit(self):
        p = Protocol()
        rid, _ = p.request("exec.stream", {"command": "x"}, stream=True)
        p.receive(b'{"id":"%s","ok":true,"data":{"stream_id":"st-1"}}\n' % rid.encode())
        p.close_route("st-1")
        self.assertTrue(p.following("st-1"))
        self.assertEqual(p.receive(b'{"method":"exec.exit","params":{"stream_id":"st-1","exit_code":0}}\n'), [])
        self.assertFalse(p.following("st-1"))

    def test_garbage_is_a_protocol_error(self):
        with self.assertRaises(ProtocolError):
            Protocol().receive(b"not json\n")
        with self.assertRaises(ProtocolError):
            Protocol(max_line=10).receive(b"x" * 11)

    def test_eof_takes_an_unterminated_last_message(self):
        p = Protocol()
        self.assertEqual(p.receive(b'{"id":"a","ok":true,"data":{}}'), [])
        self.assertEqual(len(p.eof()), 1)

    def test_sse_data_lines(self):
        p = Protocol()
        ev = p.receive(b'data: {"id":"a","ok":true,"data":{"k":1}}\n\n')
        self.assertEqual(ev[0].data.k, 1)


class HTTPParserTest(unittest.TestCase):
    def test_chunked_byte_by_byte(self):
        raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n")
        h = HTTPResponseParser()
        body = b"".join(h.feed(raw[i:i + 1]) for i in range(len(raw)))
        self.assertEqual((h.status, body, h.done), (200, b"hello world", True))

    def test_content_length_and_close(self):
        h = HTTPResponseParser()
        self.assertEqual(h.feed(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\n\r\nabcdef"), b"abc")
        self.assertTrue(h.done)
        h = HTTPResponseParser()
        self.assertEqual(h.feed(b"HTTP/1.1 200 OK\r\n\r\nuntil close"), b"until close")
        h.eof()
        h = HTTPResponseParser()
        h.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        with self.assertRaises(ProtocolError):
            h.eof()

    def test_split_url(self):
        self.assertEqual(split_url("http://127.0.0.1:8765"), ("127.0.0.1", 8765, "", "127.0.0.1:8765"))
        self.assertEqual(split_url("http://[::1]:80/trl/"), ("::1", 80, "/trl", "[::1]:80"))
        with self.assertRaises(ValueError):
            split_url("https://example.com")


class CompatibilityTest(unittest.TestCase):
    def test_sources_parse_as_python_3_9(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trl_client")
        for fn in sorted(os.listdir(root)):
            if fn.endswith(".py"):
                with open(os.path.join(root, fn), encoding="utf-8") as f:
                    ast.parse(f.read(), fn, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()

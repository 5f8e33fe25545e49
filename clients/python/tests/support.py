"""What the tests share: the daemon under test, reached through the
environment set by clients/python_test.go (TRL_SOCKET, TRL_HTTP_URL,
TRL_AUTH_TOKEN), and skipping for methods the daemon does not serve yet."""

import contextlib
import os
import unittest

from trl_client import MethodNotFound, TrlError

SOCKET = os.environ.get("TRL_SOCKET")
HTTP_URL = os.environ.get("TRL_HTTP_URL")
TOKEN = os.environ.get("TRL_AUTH_TOKEN")

needs_daemon = unittest.skipUnless(
    SOCKET, "no daemon: run these through `go test ./clients` (it builds trl and sets TRL_SOCKET)")
needs_http = unittest.skipUnless(HTTP_URL and TOKEN, "no HTTP daemon: TRL_HTTP_URL and TRL_AUTH_TOKEN are unset")


@contextlib.contextmanager
def method_or_skip(test: unittest.TestCase, method: str):
    """Skip the test when, and only when, the daemon answers METHOD_NOT_FOUND."""
    try:
        yield
    except MethodNotFound as e:
        test.skipTest("the daemon does not serve %s yet (METHOD_NOT_FOUND: %s)" % (method, e.message))


def require_method(test: unittest.TestCase, client, method: str, params) -> None:
    """Skip unless the daemon serves method: probe it with harmless params
    (any answer but METHOD_NOT_FOUND means it is served)."""
    try:
        client.call(method, params)
    except MethodNotFound as e:
        test.skipTest("the daemon does not serve %s yet (METHOD_NOT_FOUND: %s)" % (method, e.message))
    except TrlError:
        pass


def eventually(fn, timeout=10.0, interval=0.05):
    """Call fn until it returns without raising, for up to timeout seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)

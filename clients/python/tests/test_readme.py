"""The README's Python examples run as written."""

import os
import re
import subprocess
import sys
import unittest

from .support import SOCKET, needs_daemon

HERE = os.path.dirname(os.path.abspath(__file__))
READMES = {
    "README.md": os.path.join(HERE, "..", "..", "..", "README.md"),
    "clients/python/README.md": os.path.join(HERE, "..", "README.md"),
}


def python_blocks(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@needs_daemon
class ReadmeTest(unittest.TestCase):
    def test_examples_run(self):
        for name, path in READMES.items():
            blocks = [b for b in python_blocks(path) if "trl_client" in b]
            self.assertTrue(blocks, "%s has no Python example" % name)
            with self.subTest(readme=name):
                self.assertLessEqual(len(blocks[0].strip().splitlines()), 10, "the example is longer than ten lines")
                env = dict(os.environ, TRL_SOCKET=SOCKET)
                p = subprocess.run([sys.executable, "-c", blocks[0]], env=env, capture_output=True, text=True,
                                   timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("hello from /tmp", p.stdout)


if __name__ == "__main__":
    unittest.main()

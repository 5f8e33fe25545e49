"""The method set, written once for Client and AsyncClient.

Each method only builds a method name and params and names how to shape the
answer; the concrete client's ``_call`` either returns the shaped value
(Client) or a coroutine of it (AsyncClient), and ``_stream`` returns a
Stream or an awaitable AsyncStream. So the two clients cannot drift apart.
"""

import base64
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ._core import params

OutputCallback = Callable[[str], Any]
InputItem = Union[str, Dict[str, Any]]


def key(name: str) -> Dict[str, Any]:
    """An input item that presses a named key: ``key("Enter")``, ``key("C-c")``."""
    return {"key": name}


def paste(text: str) -> Dict[str, Any]:
    """An input item pasted as one block (bracketed when the program asked for it)."""
    return {"paste": text}


def eof() -> Dict[str, Any]:
    """An input item that sends the terminal's end-of-file (Ctrl-D)."""
    return {"eof": True}


def _sessions(d: Any) -> Any:
    return d.get("sessions", [])


class Methods:
    """trl's methods (docs/protocol.md). Data come back as Result dicts."""

    def _call(self, method: str, p: Optional[Dict[str, Any]] = None, post: Optional[Callable[[Any], Any]] = None) -> Any:
        raise NotImplementedError

    def _stream(self, method: str, p: Dict[str, Any], on_output: Optional[Callable[[Any], Any]],
                on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback],
                on_waiting: Optional[Callable[[Any], Any]]) -> Any:
        raise NotImplementedError

    # ---- raw ------------------------------------------------------------

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Call any method by name; returns its data."""
        return self._call(method, params)

    # ---- sessions -------------------------------------------------------

    def session_create(self, *, name: Optional[str] = None, shell: Optional[str] = None,
                       env: Optional[Dict[str, str]] = None, working_dir: Optional[str] = None,
                       timeout_s: Optional[float] = None, rows: Optional[int] = None,
                       cols: Optional[int] = None, state: Optional[Dict[str, Any]] = None) -> Any:
        """Start a shell session; the data carry its ``session_id``. ``state``, a
        session's state (see ``state``), from this daemon or another, is applied to it."""
        return self._call("session.create", params(name=name, shell=shell, env=env, working_dir=working_dir,
                                                   timeout_s=timeout_s, rows=rows, cols=cols,
                                                   state=dict(state) if state is not None else None))

    def session_get(self, session_id: str) -> Any:
        """A session's info (state, cwd, commands_run, ...) by id or name."""
        return self._call("session.info", {"session_id": session_id})

    def session_list(self) -> Any:
        """Every live session's info."""
        return self._call("session.list", None, _sessions)

    def session_destroy(self, session_id: str, force: bool = False) -> Any:
        """End a session and every process started in it."""
        return self._call("session.destroy", params(session_id=session_id, force=force or None))

    def state(self, session_id: str) -> Any:
        """A session's shell state (docs/state.md): cwd, env, vars, functions, aliases,
        options, umask, dirs, and ``not_carried``. A plain dict, JSON-ready, to pass to
        ``session_create(state=...)`` here or on another daemon. A busy session
        raises SessionBusy."""
        return self._call("session.state", {"session_id": session_id})

    def fork(self, session_id: str, *, name: Optional[str] = None, env: Optional[Dict[str, str]] = None,
             working_dir: Optional[str] = None, timeout_s: Optional[float] = None, rows: Optional[int] = None,
             cols: Optional[int] = None) -> Any:
        """A new session of the same shell with the session's state; the source is
        untouched. The data are the new session's info (``parent`` names the source)."""
        return self._call("session.fork", params(session_id=session_id, name=name, env=env, working_dir=working_dir,
                                                 timeout_s=timeout_s, rows=rows, cols=cols))

    # ---- commands -------------------------------------------------------

    def run(self, command: str, session_id: Optional[str] = None, *, timeout_s: Optional[float] = None,
            stdin: Optional[str] = None, env: Optional[Dict[str, str]] = None,
            max_output_bytes: Optional[int] = None, check: bool = False, yield_ms: Optional[int] = None,
            until: Optional[Sequence[str]] = None, render: Optional[str] = None) -> Any:
        """Run a command and return its result (stdout, stderr, exit_code, ...).

        Without ``session_id`` the session named ``default`` is used. With
        ``check=True`` a non-zero exit raises CommandFailed and a timeout
        CommandTimeout, the result in the exception's ``data``.
        """
        return self._call("exec.run", params(session_id=session_id, command=command, timeout_s=timeout_s,
                                             stdin=stdin, env=env, max_output_bytes=max_output_bytes,
                                             check=check or None, yield_ms=yield_ms,
                                             until=list(until) if until is not None else None, render=render))

    def stream(self, command: str, session_id: Optional[str] = None, *, timeout_s: Optional[float] = None,
               stdin: Optional[str] = None, env: Optional[Dict[str, str]] = None,
               on_output: Optional[Callable[[Any], Any]] = None, on_stdout: Optional[OutputCallback] = None,
               on_stderr: Optional[OutputCallback] = None, on_waiting: Optional[Callable[[Any], Any]] = None) -> Any:
        """Start a command and follow its output as it is produced.

        Returns a Stream: iterate it for Chunks, or call ``wait()`` for the
        exit; callbacks (``on_stdout(text)``, ``on_stderr(text)``,
        ``on_output(chunk)``) run for each chunk as it is consumed, and
        ``on_waiting(input)`` when the command begins to wait for terminal
        input (``input["prompt"]``; answer with ``input()``). Over
        the socket, output that arrived but was not consumed yet waits in
        the client's memory: consume or ``close()`` a stream you start.
        Several streams may run at once on one client (one per session).
        """
        return self._stream("exec.stream", params(session_id=session_id, command=command, timeout_s=timeout_s,
                                                  stdin=stdin, env=env), on_output, on_stdout, on_stderr, on_waiting)

    def read(self, stream_id: Optional[str] = None, offset: int = 0, limit: Optional[int] = None,
             stream: Optional[str] = None, *, exec_id: Optional[str] = None, render: Optional[str] = None) -> Any:
        """Read retained output of a stream (or, by ``exec_id``, a command) from ``offset``.

        ``render="text"`` returns it as a reader sees it (escapes gone,
        ``\r`` redraws collapsed).
        """
        return self._call("exec.read", params(stream_id=stream_id, exec_id=exec_id, offset=offset, limit=limit,
                                              stream=stream, render=render))

    def attach(self, stream_id: Optional[str] = None, offset: int = 0, stderr_offset: int = 0, *,
               exec_id: Optional[str] = None, on_output: Optional[Callable[[Any], Any]] = None,
               on_stdout: Optional[OutputCallback] = None, on_stderr: Optional[OutputCallback] = None,
               on_waiting: Optional[Callable[[Any], Any]] = None) -> Any:
        """Follow a running or finished stream (or command) again from the given offsets."""
        return self._stream("exec.attach", params(stream_id=stream_id, exec_id=exec_id, offset=offset,
                                                  stderr_offset=stderr_offset), on_output, on_stdout, on_stderr,
                            on_waiting)

    def cancel(self, session_id: Optional[str] = None, signal: Union[str, int, None] = None, *,
               exec_id: Optional[str] = None) -> Any:
        """Signal the running command (SIGINT by default); the session stays usable."""
        return self._call("exec.cancel", params(session_id=session_id, exec_id=exec_id, signal=signal))

    def input(self, input: Union[InputItem, List[InputItem]], exec_id: Optional[str] = None, *,
              session_id: Optional[str] = None, yield_ms: Optional[int] = None,
              until: Optional[Sequence[str]] = None, require_waiting: Optional[bool] = None,
              secret: Optional[bool] = None, render: Optional[str] = None) -> Any:
        """Type into a running command's terminal, then wait like run (docs/protocol.md, "Interactive programs").

        ``input`` is a string, an item (``key("Enter")``, ``paste(...)``,
        ``eof()``) or a list of them.
        """
        items = input if isinstance(input, list) else [input]
        return self._call("exec.input", params(exec_id=exec_id, session_id=session_id, input=items,
                                               yield_ms=yield_ms, until=list(until) if until is not None else None,
                                               require_waiting=require_waiting, secret=secret, render=render))

    def wait(self, exec_id: Optional[str] = None, *, exec_ids: Optional[Sequence[str]] = None,
             timeout_ms: Optional[int] = None, until: Optional[Sequence[str]] = None,
             render: Optional[str] = None) -> Any:
        """Long-poll until a command exits or reaches an ``until`` event.

        ``exec_id="any"`` waits for any command.
        """
        return self._call("exec.wait", params(exec_id=exec_id, exec_ids=list(exec_ids) if exec_ids else None,
                                              timeout_ms=timeout_ms, until=list(until) if until is not None else None,
                                              render=render))

    # ---- screen ---------------------------------------------------------

    def screen(self, session_id: str, *, scrollback_lines: Optional[int] = None, format: Optional[str] = None) -> Any:
        """What a person would see on the session's terminal (docs/protocol.md, "The screen")."""
        return self._call("session.screen", params(session_id=session_id, scrollback_lines=scrollback_lines,
                                                   format=format))

    def session_output(self, session_id: str, offset: int = 0, limit: Optional[int] = None,
                       render: Optional[str] = None) -> Any:
        """Output written while no command ran (background jobs), from ``offset``."""
        return self._call("session.output", params(session_id=session_id, offset=offset, limit=limit, render=render))

    def resize(self, session_id: str, rows: int, cols: int) -> Any:
        """Set the session's terminal size (the program gets SIGWINCH)."""
        return self._call("session.resize", {"session_id": session_id, "rows": rows, "cols": cols})

    # ---- files (docs/files.md) -----------------------------------------------
    # Paths are absolute or relative to the session's current directory;
    # without session_id the session named "default" is used.

    def fs_read(self, path: str, session_id: Optional[str] = None, *, offset: Optional[int] = None,
                length: Optional[int] = None, encoding: Optional[str] = None, line_offset: Optional[int] = None,
                line_limit: Optional[int] = None) -> Any:
        """A chunk of a file: ``data`` (UTF-8 text, or base64 when ``encoding`` says so), ``complete``, ``size``."""
        return self._call("fs.read", params(session_id=session_id, path=path, offset=offset, length=length,
                                            encoding=encoding, line_offset=line_offset, line_limit=line_limit))

    def fs_write(self, path: str, data: Union[str, bytes], session_id: Optional[str] = None, *,
                 mode: Optional[str] = None, append: Optional[bool] = None, create_dirs: Optional[bool] = None,
                 if_sha256: Optional[str] = None) -> Any:
        """Write a file atomically (or append); bytes are sent base64. Answers ``path``, ``size``, ``sha256``."""
        if isinstance(data, (bytes, bytearray)):
            text, enc = base64.b64encode(bytes(data)).decode("ascii"), "base64"
        else:
            text, enc = data, None
        return self._call("fs.write", params(session_id=session_id, path=path, data=text, encoding=enc, mode=mode,
                                             append=append, create_dirs=create_dirs, if_sha256=if_sha256))

    def fs_edit(self, path: str, old: str, new: str, session_id: Optional[str] = None, *,
                replace_all: Optional[bool] = None) -> Any:
        """Replace the exact text ``old`` by ``new``; answers the changed ``lines``."""
        return self._call("fs.edit", params(session_id=session_id, path=path, old=old, new=new,
                                            replace_all=replace_all))

    def fs_list(self, path: Optional[str] = None, session_id: Optional[str] = None, *, depth: Optional[int] = None,
                limit: Optional[int] = None, offset: Optional[int] = None, hidden: Optional[bool] = None) -> Any:
        """A page of a directory tree: ``entries`` sorted by path, ``total``, ``complete``."""
        return self._call("fs.list", params(session_id=session_id, path=path, depth=depth, limit=limit,
                                            offset=offset, hidden=hidden))

    def fs_stat(self, path: str, session_id: Optional[str] = None) -> Any:
        """A file's type, size, mode, mtime (and a symlink's target)."""
        return self._call("fs.stat", params(session_id=session_id, path=path))

    def fs_mkdir(self, path: str, session_id: Optional[str] = None, *, parents: Optional[bool] = None) -> Any:
        return self._call("fs.mkdir", params(session_id=session_id, path=path, parents=parents))

    def fs_remove(self, path: str, session_id: Optional[str] = None, *, recursive: Optional[bool] = None) -> Any:
        return self._call("fs.remove", params(session_id=session_id, path=path, recursive=recursive))

    def fs_move(self, src: str, dst: str, session_id: Optional[str] = None, *, overwrite: Optional[bool] = None) -> Any:
        return self._call("fs.move", params(session_id=session_id, **{"from": src, "to": dst}, overwrite=overwrite))

    # ---- system ---------------------------------------------------------

    def ping(self) -> Any:
        """``uptime_s`` and ``version``."""
        return self._call("system.ping")

    def stats(self) -> Any:
        """Sessions, commands run, memory and limits of the daemon."""
        return self._call("system.stats")

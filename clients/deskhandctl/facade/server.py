"""``deskhandctl mcp``: an MCP server on stdio that is one more client of the daemon.

What this owns: the process around :mod:`deskhandctl.facade.core` (messages, lifecycle,
elicitation), :mod:`deskhandctl.facade.tools` (tools and results) and :mod:`deskhandctl.facade.link`
(the daemon connection): reading stdin line by line, writing stdout one whole message at a time
under a lock (stdout carries MCP messages only; logs go to stderr), running each ``tools/call``
on a thread of its own, cancelling, forwarding progress, and putting the daemon's questions to
the host as ``elicitation/create``. Its command line is read by :mod:`deskhandctl.cli.parser`
(``mcp``'s help text is in the grammar table); ``deskhandctl mcp config`` is
:mod:`deskhandctl.setup.mcpconfig`'s.

It never owns the desktop: every tool is a daemon op on a session of its own, so the daemon's
rules (stateIds, consent, the emergency stop, the queue) apply exactly as to every client.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time

from deskhandctl.facade import core
from deskhandctl.facade.core import Notification, Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    from deskhandctl.cli.grammar import Args
    from deskhandctl.facade.link import Call, Link


class _Active:
    """One ``tools/call`` in progress."""

    __slots__ = ("call", "cancelled", "elicitations", "progress", "request_id", "token", "tool")

    def __init__(self, request_id: str | int, tool: str, token: object) -> None:
        self.request_id = request_id
        self.tool = tool
        self.token = token  # the host's progressToken, or None
        self.progress = 0
        self.cancelled = False
        self.call: Call | None = None
        self.elicitations: set[int] = set()


class _Workers:
    """Threads that run tool calls, kept for the next call once one ends: a click through the
    facade then costs a hand-over to a waiting thread instead of a thread's start (measured
    with bench/mcp_facade.py). Grows with the number of calls in flight; never shrinks (a
    host has few at once)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]]
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # one waiting thread takes it
        self._jobs.put((fn, args))
        if start:
            threading.Thread(target=self._work, name="mcp-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            fn, args = self._jobs.get()
            fn(*args)  # the tool runners answer every failure themselves
            with self._lock:
                self._idle += 1


class _Elicitation:
    """One question put to the host, waiting for its response or for the question to close."""

    __slots__ = ("active", "answered_at", "asked_at", "done", "event", "id", "response")

    def __init__(self, elicitation_id: int, event: dict[str, Any], active: _Active) -> None:
        self.id = elicitation_id
        self.event = event
        self.active = active
        self.done = threading.Event()
        self.response: Response | None = None
        self.asked_at = 0.0  # monotonic: when the question went to the host
        self.answered_at = 0.0  # and when its response came back


class Server:
    """The MCP server; :meth:`serve` runs until stdin ends."""

    def __init__(
        self, out: BinaryIO, *, socket_path: str | None, autostart: bool, version: str
    ) -> None:
        self._out = out
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()  # _active, _elicitations, _next_elicitation
        self.socket_path = socket_path
        self.autostart = autostart
        self.version = version
        self.host: core.Host | None = None
        self.initialized = False
        self._schemas: dict[str, Any] | None = None
        self._link: Link | None = None
        self._link_lock = threading.Lock()  # link(): the reader and every worker may ask first
        self._listed_mode = "native"
        self._active: dict[str | int, _Active] = {}
        self._elicitations: dict[int, _Elicitation] = {}
        self._next_elicitation = 1
        self._workers = _Workers()
        self._stdin: BinaryIO | None = None
        self._input_ended = threading.Event()
        self.stop_signal: int | None = None

    # ----- stdio -------------------------------------------------------------------------------

    def write(self, message: dict[str, Any]) -> None:
        data = core.encode(message)
        with self._write_lock:
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the host went away; stdin's end finishes us

    def serve(self, stdin: BinaryIO) -> int:
        self._stdin = stdin
        # The reading moves between worker threads (see _read_lines); this thread only waits
        # for the end of input (or a stop signal), so a call still running then never delays
        # the exit.
        self._workers.submit(self._read_lines)
        self._input_ended.wait()
        if self.stop_signal is not None:
            self._wind_down()
        if self._link is not None:
            self._link.close()
        return 0

    def stop(self, signum: int) -> None:
        """A stop signal arrived (the main thread's handler calls this): end like the end of
        input, after :meth:`_wind_down`. Hosts stop their servers with SIGINT then SIGTERM a
        moment later (Claude Code: 100 ms), or SIGTERM to the group (Codex)."""
        self.stop_signal = signum
        self._input_ended.set()

    def _wind_down(self) -> None:
        """Cancel every call in flight at the daemon, and give them a moment to hear back:
        the daemon then records each with its delivery (refused when nothing was sent yet,
        unknown once it was), and each call's log line says which. The host is going away, so
        they get no response."""
        with self._lock:
            active = list(self._active)
        for request_id in active:
            self._cancel(request_id, "deskhandctl mcp is stopping")
        deadline = time.monotonic() + STOP_GRACE_S
        while self._active and time.monotonic() < deadline:
            time.sleep(0.01)

    def _read_lines(self) -> None:
        """Read and handle stdin's lines until it ends, or until a line is a tool call: then
        another thread takes over the reading and this one runs the call at once, so a call
        waits for no thread to wake (the thread that reads next wakes meanwhile)."""
        stdin = self._stdin
        assert stdin is not None  # serve() set it
        while True:
            line = stdin.readline()
            if not line:
                self._input_ended.set()
                return
            if not line.strip():
                continue
            try:
                run = self.handle(line)
            except Exception as exc:  # never let one message end the server
                _log(f"internal error handling a message: {exc!r}")
                continue
            if run is not None:
                self._workers.submit(self._read_lines)
                run()
                return

    # ----- dispatch ----------------------------------------------------------------------------

    def handle(self, line: bytes) -> Callable[[], None] | None:
        """Answer one line; a tool call is returned to be run (by the caller's thread)."""
        message = core.parse_line(line)
        if isinstance(message, dict):
            self.write(message)
        elif isinstance(message, Request):
            return self._request(message)
        elif isinstance(message, Notification):
            self._notification(message)
        else:
            self._response(message)
        return None

    def _request(self, req: Request) -> Callable[[], None] | None:
        if req.method == "ping":
            self.write(core.result_message(req.id, {}))
            return None
        if req.method == "initialize":
            self._initialize(req)
            return None
        if self.host is None:
            self.write(
                core.error_message(
                    req.id, core.INVALID_REQUEST, "Invalid Request: send initialize first"
                )
            )
            return None
        if req.method == "tools/list":
            self._list_tools(req)
        elif req.method == "tools/call":
            return self._call_tool(req)
        else:
            self.write(
                core.error_message(req.id, core.METHOD_NOT_FOUND, f"Method not found: {req.method}")
            )
        return None

    def _initialize(self, req: Request) -> None:
        if self.host is not None:
            self.write(
                core.error_message(
                    req.id, core.INVALID_REQUEST, "Invalid Request: already initialized"
                )
            )
            return
        host = core.negotiate(req.params)
        if isinstance(host, str):
            self.write(core.error_message(req.id, core.INVALID_PARAMS, host))
            return
        unreachable = self._unreachable()
        if unreachable:
            # A host shows a server that initialized as connected and working; one that cannot
            # work should say so where the person looks (`claude mcp list`: "Failed to connect").
            _log(unreachable)
            self.write(core.error_message(req.id, core.SERVER_ERROR, unreachable))
            return
        self.host = host
        _log(
            f"serving {host.name} {host.version} (MCP {host.revision}, "
            f"elicitation {'yes' if host.elicitation else 'no'})"
        )
        self.write(core.result_message(req.id, core.initialize_result(host, self.version)))

    def _unreachable(self) -> str:
        """Why no tool could work, when the daemon is not there and this server may not start
        one (``--no-autostart``, ``DESKHAND_NO_AUTOSTART``); "" otherwise. One connect, no
        handshake: it costs well under a millisecond when the daemon is there."""
        if self.autostart and not os.environ.get("DESKHAND_NO_AUTOSTART", "").strip():
            return ""  # the first tool call starts the daemon if need be (and initialize
            # stays as cheap as it was: no connection code is imported for it)
        import socket as socketlib  # a few ms to import: only when autostart is off

        from deskhandctl.wire.connect import autostart_allowed, resolve_socket

        if self.autostart and autostart_allowed(False):
            return ""
        socket_path = resolve_socket(self.socket_path)
        probe = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        try:
            probe.settimeout(2.0)
            probe.connect(socket_path)
        except OSError as exc:
            return (
                f"Deskhand's daemon is not reachable at {socket_path} ({exc.strerror or exc}) "
                "and this server may not start one (autostart is off): start it "
                "(`systemctl --user start deskhand.socket`, or `deskhand-d`), then restart "
                "this server in the host"
            )
        finally:
            probe.close()
        return ""

    def _notification(self, note: Notification) -> None:
        if note.method == "notifications/initialized":
            self.initialized = True
        elif note.method == "notifications/cancelled":
            self._cancel(note.params.get("requestId"), str(note.params.get("reason") or ""))
        # Every other notification (roots changed, progress of ours, ...) needs nothing from us.

    def _response(self, response: Response) -> None:
        with self._lock:
            pending = self._elicitations.pop(response.id, None)  # type: ignore[call-overload]
        if pending is None:
            return  # late (we cancelled it) or unknown: the spec says ignore it
        pending.answered_at = time.monotonic()
        pending.response = response
        pending.done.set()

    # ----- tools -------------------------------------------------------------------------------

    def schemas(self) -> dict[str, Any]:
        if self._schemas is None:
            from deskhandctl.facade.tools import load_schemas

            self._schemas = load_schemas()
        return self._schemas

    def _list_tools(self, req: Request) -> None:
        from deskhandctl.facade.tools import tool_list

        cursor = req.params.get("cursor")
        if cursor is not None:  # we never hand out cursors: the list is one page
            self.write(core.error_message(req.id, core.INVALID_PARAMS, "Invalid cursor"))
            return
        from deskhandctl.exitcodes import CliError

        link = self.link()
        try:
            link.ensure()  # the list depends on the session's mode
        except CliError as exc:
            _log(f"listing the tools without the daemon: {exc.message}")
        mode = link.mode
        self._listed_mode = mode
        self.write(core.result_message(req.id, {"tools": tool_list(self.schemas(), mode)}))

    def _call_tool(self, req: Request) -> Callable[[], None] | None:
        """The call to run, once registered (None: it was answered with an error)."""
        from deskhandctl.facade.tools import TOOL_NAMES

        name = req.params.get("name")
        if not isinstance(name, str) or name not in TOOL_NAMES:
            self.write(core.error_message(req.id, core.INVALID_PARAMS, f"Unknown tool: {name}"))
            return None
        meta = req.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        active = _Active(req.id, name, token)
        with self._lock:
            if req.id in self._active:
                duplicate = True
            else:
                duplicate = False
                self._active[req.id] = active
        if duplicate:
            self.write(
                core.error_message(
                    req.id, core.INVALID_REQUEST, "Invalid Request: this id is already in use"
                )
            )
            return None
        arguments = req.params.get("arguments")
        return lambda: self._run_tool(active, arguments)

    def link(self) -> Link:
        """The one :class:`Link`, made on first use under its own lock (the reader thread and
        the workers may all ask for it at once; two would mean two daemon sessions)."""
        with self._link_lock:
            return self._make_link() if self._link is None else self._link

    def _make_link(self) -> Link:
        from deskhandctl.facade.link import Link
        from deskhandctl.wire.connect import autostart_allowed, resolve_socket

        host = self.host
        assert host is not None
        self._link = Link(
            socket_path=resolve_socket(self.socket_path),
            autostart=autostart_allowed(not self.autostart),
            client_name=host.name[:200],
            client_version=host.version[:200],
            session_base=lambda serial: core.session_name(host, os.getpid(), serial),
            can_answer_questions=host.elicitation,
            on_event=self._loose_event,
        )
        return self._link

    def _run_tool(self, active: _Active, arguments: object) -> None:
        try:
            result = self._tool_result(active, arguments)
        except Exception as exc:  # a bug: still answer, and honestly
            _log(f"internal error in {active.tool}: {exc!r}")
            from deskhandctl.facade.tools import shape_error

            result = shape_error(active.tool, "internal", f"deskhandctl mcp failed: {exc!r}")
        with self._lock:
            self._active.pop(active.request_id, None)
            leftover = [self._elicitations.pop(e, None) for e in active.elicitations]
        for pending in leftover:
            if pending is not None:
                self._close_elicitation(pending, "the tool call ended")
        if active.cancelled:
            _log(
                f"{active.tool} (request {active.request_id!r}) was cancelled; ended as: "
                f"{_summary(result)}"
            )
            return  # the host cancelled it: it gets no response
        self.write(core.result_message(active.request_id, result))
        self._maybe_list_changed()

    def _tool_result(self, active: _Active, arguments: object) -> dict[str, Any]:
        from deskhandctl.exitcodes import CliError
        from deskhandctl.facade.link import Lost, NoAnswer
        from deskhandctl.facade.tools import ACTIONS, check_arguments, shape_error, shape_result

        tool = active.tool
        schema = self.schemas()[tool]
        link = self.link()
        if tool in ACTIONS and link.mode != "jev":
            schema = {
                **schema,
                "properties": {k: v for k, v in schema["properties"].items() if k != "handoff"},
            }
        params, problem = check_arguments(schema, arguments)
        app = str(params.get("app", ""))
        if problem is not None:
            return shape_error(tool, "invalid_arguments", problem, app=app, delivery="refused")
        for attempt in (1, 2):
            try:
                link.ensure()
            except CliError as exc:
                return shape_error(
                    tool, "daemon_unavailable", exc.message, app=app, delivery="refused"
                )
            if active.cancelled:
                return shape_error(
                    tool, "cancelled", "cancelled before it was sent", app=app, delivery="refused"
                )
            try:
                active.call = link.start(tool, params)
                break
            except Lost as exc:
                if attempt == 2:  # never sent (Lost.sent is False from start)
                    return shape_error(
                        tool, "daemon_unavailable", exc.reason, app=app, delivery="refused"
                    )
        assert active.call is not None
        reconnected = link.take_reconnected()
        if active.cancelled:  # the cancellation came while we were sending
            link.send_nowait("cancel", {"request_id": active.call.id})
        try:
            reply = link.wait(active.call, lambda event: self._call_event(active, event))
        except Lost as exc:
            # NoAnswer (the reply did not come in time) keeps the connection; any other loss
            # means the next call connects again.
            stuck = isinstance(exc, NoAnswer)
            if tool in ACTIONS or tool == "run":
                after = "" if stuck else " The next call connects again, to a new session."
                return shape_error(
                    tool,
                    "outcome_unknown",
                    f"{exc.reason}; the request had been sent, so it may or may not have "
                    f"happened.{after}",
                    {"delivery": "unknown"},
                    app=app,
                    reconnected=reconnected,
                )
            after = (
                " It may be stuck."
                if stuck
                else " Call the tool again: the next call connects again, to a new session."
            )
            return shape_error(
                tool,
                "daemon_unavailable",
                f"{exc.reason}.{after}",
                app=app,
                reconnected=reconnected,
            )
        if reply.get("type") == "error":
            error = _object(reply.get("error"))
            data = _object(error.get("data"))
            return shape_error(
                tool,
                str(error.get("code", "internal")),
                str(error.get("message", "")),
                data,
                app=app,
                reconnected=reconnected,
            )
        result = _object(reply.get("result"))
        if result.get("kind") == "mode":
            link.mode = str(result.get("mode") or link.mode)
        return shape_result(tool, result, session=link.session, reconnected=reconnected)

    def _maybe_list_changed(self) -> None:
        """Tell the host when the tools it listed no longer fit the session's mode."""
        link = self._link
        if link is None or link.mode == self._listed_mode:
            return
        self._listed_mode = link.mode
        self.write(core.notification("notifications/tools/list_changed"))

    # ----- cancellation ------------------------------------------------------------------------

    def _cancel(self, request_id: object, reason: str) -> None:
        with self._lock:
            active = self._active.get(request_id) if isinstance(request_id, str | int) else None
            if active is None:
                return  # unknown or finished: ignored, as the spec asks
            active.cancelled = True
            pending = [self._elicitations.pop(e, None) for e in active.elicitations]
        _log(f"the host cancelled {active.tool} (request {request_id!r}): {reason or 'no reason'}")
        for item in pending:
            if item is not None:
                self._close_elicitation(item, "the tool call was cancelled")
        if active.call is not None and self._link is not None:
            self._link.send_nowait("cancel", {"request_id": active.call.id})

    # ----- events: progress and questions ------------------------------------------------------

    def _call_event(self, active: _Active, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "progress":
            if active.token is None or active.cancelled:
                return
            active.progress += 1
            params: dict[str, Any] = {
                "progressToken": active.token,
                "progress": active.progress,
                "message": str(event.get("line") or event.get("phase") or "working"),
            }
            self.write(core.notification("notifications/progress", params))
        elif kind == "question":
            self._ask(active, event)

    def _ask(self, active: _Active, event: dict[str, Any]) -> None:
        host = self.host
        if host is None or not host.elicitation or active.cancelled:
            return  # we said we cannot answer; the daemon decides what that means
        with self._lock:
            pending = _Elicitation(self._next_elicitation, event, active)
            self._next_elicitation += 1
            self._elicitations[pending.id] = pending
            active.elicitations.add(pending.id)
        pending.asked_at = time.monotonic()
        self.write(
            {
                "jsonrpc": "2.0",
                "id": pending.id,
                "method": "elicitation/create",
                "params": core.elicitation_params(event, host.revision),
            }
        )
        threading.Thread(target=self._await_answer, args=(pending,), daemon=True).start()

    def _await_answer(self, pending: _Elicitation) -> None:
        pending.done.wait()
        if pending.response is None:
            return  # closed: answered elsewhere, expired, or its call ended
        question_id = str(pending.event.get("id"))
        elapsed = pending.answered_at - pending.asked_at
        if core.host_answered_itself(pending.response, elapsed):
            # Nobody saw it: never relay that as the person's no. A console may still answer.
            _log(f"the host answered question {question_id!r} by itself in {elapsed:.3f} s")
            op, fields = "question_pass", {"question_id": question_id}
        else:
            choice = core.choice_from_answer(pending.event, pending.response)
            _log(f"the host answered question {question_id!r}: {choice}")
            op, fields = "answer", {"question_id": question_id, "choice": choice}
        link = self._link
        if link is None:
            return
        from deskhandctl.facade.link import Lost

        try:
            reply = link.request(op, fields)
        except Lost:
            return  # the call waiting on it learns about the lost link itself
        if reply.get("type") == "error":
            _log(f"the daemon did not take the {op}: {reply.get('error')}")

    def _close_elicitation(self, pending: _Elicitation, reason: str) -> None:
        """Withdraw a question from the host (it gets ``notifications/cancelled``)."""
        pending.active.elicitations.discard(pending.id)
        params = {"requestId": pending.id, "reason": reason}
        self.write(core.notification("notifications/cancelled", params))
        pending.done.set()

    def _loose_event(self, event: dict[str, Any]) -> None:
        """Events about no call of ours in flight (the reader thread calls this)."""
        kind = event.get("kind")
        if kind == "question_closed":
            question_id = event.get("id")
            with self._lock:
                found = [p for p in self._elicitations.values() if p.event.get("id") == question_id]
                for p in found:
                    del self._elicitations[p.id]
            how = event.get("how") or "closed"
            for p in found:
                self._close_elicitation(p, f"the question was {how} elsewhere")
        elif kind == "notice":
            _log(f"deskhand-d: {event.get('message', '')}")


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _summary(result: dict[str, Any]) -> str:
    """A result in a few words for the log, read from its text (the one part every result
    has): the refusal's code, or done, with the delivery it states."""
    import re

    blocks = result.get("content") or []
    text = "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
    failed = re.search(r"^\S+ failed: ([a-z_]+)\.", text, re.MULTILINE)
    delivery = re.search(r"[Dd]elivery: ([a-z]+)", text)
    said = f" (delivery {delivery.group(1)})" if delivery else ""
    return (failed.group(1) if failed and result.get("isError") else "done") + said


def _log(line: str) -> None:
    try:
        sys.stderr.write(f"deskhandctl mcp: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


STOP_GRACE_S = 0.5
"""How long a stop signal waits for the cancelled calls' replies: well inside the second a host
gives before it kills the server."""


def run(args: Args) -> int:
    """The ``mcp`` command's handler (named in the grammar table): serve MCP on stdin/stdout,
    with the global ``--socket`` and ``--no-autostart``, until the host closes stdin or stops
    it with SIGINT or SIGTERM."""
    # _signal, not signal: the public module builds its enums on import, which costs more than
    # the rest of this server's start (measured: 2.4 ms of about 20).
    import _signal  # type: ignore[import-not-found]  # typeshed describes only "signal"

    socket, no_autostart = args.socket, args.no_autostart
    from deskhand_d import __version__

    out = sys.stdout.buffer
    # stdout carries MCP messages only: anything printed by accident goes to stderr instead.
    sys.stdout = sys.stderr
    # The socket is resolved when the first tool needs the daemon: initialize stays cheap.
    server = Server(out, socket_path=socket, autostart=not no_autostart, version=__version__)
    names = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM"}
    for signum in names:
        _signal.signal(signum, lambda number, _frame: server.stop(number))
    code = server.serve(sys.stdin.buffer)
    if server.stop_signal is not None:
        _log(f"stopped by {names.get(server.stop_signal, server.stop_signal)}")
        # A worker thread is still blocked reading stdin and holds its buffer's lock; the
        # interpreter's own shutdown would wait on that lock and abort ("could not acquire
        # lock for <stdin>"). Everything worth keeping is written: leave at once.
        try:
            out.flush()
        except (OSError, ValueError):
            pass
        os._exit(0)
    return code

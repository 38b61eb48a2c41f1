"""The command-line grammar of ``deskhandctl`` as one table, and :class:`Args`, what it parses to.

What is here: the values each argument accepts (text in, value out, ``ValueError`` if invalid),
the shapes of the table (:class:`Option`, :class:`Param`, :class:`Command`), the global options
and every command with its arguments, the longer hints some usage errors add, and :class:`Args`.
A :class:`Param`'s ``dest`` is the request field it fills (``--index`` fills ``element_index``),
so the wire names are written once, here; a test checks every ``dest`` against
``deskhand_d.protocol.requests``. :mod:`deskhandctl.cli.parser` reads a command line with this table
(and :mod:`deskhandctl.cli.usage` builds argparse from it for help and usage errors);
:mod:`deskhandctl.cli.commands` builds each request from it.

Importing this module builds small tuples and dicts only; it is on every command's start-up
path, so it imports nothing beyond itself, and its classes are plain ``__slots__`` classes (no
dataclasses, no ``typing`` at run time).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Check = Callable[[dict[str, object]], str | None]

PROG = "deskhandctl"
DESCRIPTION = "Talk to the Deskhand daemon (deskhand-d) running for this user."
EPILOG = (
    "Exit codes: 0 ok, 1 error reply, failed action or not confirmed, 2 usage, "
    "66 needs your terminal, 69 daemon not running, "
    "73 screenshot not saved, 75 timeout, 76 protocol mismatch, 77 permission refused, "
    "130 interrupted. See docs/cli.md."
)
DEFAULT_TIMEOUT_S = 10.0
QUESTIONS_TIMEOUT_S = 40.0
"""Default ``--timeout`` of ``questions``: more than its long poll's wait, so an idle console
is not taken for a stuck daemon."""
DESKTOP_TIMEOUT_S = 60.0
"""Default ``--timeout`` for commands that may start the backend or wait on it."""
_ON_SESSION = "deskhandctl.cli.commands:"
REQUEST_HANDLER = _ON_SESSION + "request"
"""The handler of a command that is one request and its reply (most of them)."""


# ----- values: text in, value out, ValueError if invalid -----------------------------------------
# argparse words a ValueError's message as "invalid value ...: <message>"; the fast parser simply
# declines the command line so that argparse can say so.


def parse_timeout(text: str) -> float:
    """``--timeout`` values: a number of seconds greater than zero."""
    value = float(text)  # ValueError for anything else
    if not value > 0 or value == float("inf"):
        raise ValueError("must be more than 0 seconds")
    return value


def parse_session(text: str) -> str:
    """``--session``: a session name as the wire layer checks it (:mod:`deskhandctl.wire.names`,
    imported only when the option is given, so that ``status`` does not pay for it)."""
    from deskhandctl.wire.names import parse_session as check

    return check(text)


def parse_index(text: str) -> int:
    """An element index as the observation numbers them: 0 to 1,000,000."""
    value = int(text)
    if not 0 <= value <= 1_000_000:
        raise ValueError("must be between 0 and 1000000")
    return value


def parse_count(text: str) -> int:
    """``--count``: single, double or triple click."""
    value = int(text)
    if not 1 <= value <= 3:
        raise ValueError("must be 1, 2 or 3")
    return value


def parse_last(text: str) -> int:
    """``audit --last``: how many dispatches to show."""
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def parse_number(text: str) -> float:
    """A finite coordinate."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("must be a finite number")
    return value


def parse_pages(text: str) -> float:
    """``--pages``: more than 0, at most 100."""
    value = float(text)
    if not 0 < value <= 100:
        raise ValueError("must be more than 0 and at most 100")
    return value


def parse_point(text: str) -> tuple[float, float]:
    """``X,Y``: two finite numbers separated by a comma."""
    x, comma, y = text.partition(",")
    if not comma:
        raise ValueError("expected X,Y")
    return parse_number(x), parse_number(y)


def parse_text(text: str) -> str:
    """A non-empty string."""
    if not text:
        raise ValueError("must not be empty")
    return text


def steps(text: str) -> int:
    """``run --max-steps``: 1 to 20."""
    value = parse_index(text)
    if not 1 <= value <= 20:
        raise ValueError("must be between 1 and 20")
    return value


# ----- the shapes of the table -------------------------------------------------------------------


class Option:
    """A global option: a flag (``convert`` is None) or an option taking one value."""

    __slots__ = ("convert", "default", "dest", "flag", "help", "metavar")

    def __init__(
        self,
        flag: str,
        help: str,  # noqa: A002 - argparse's own name for it
        *,
        convert: Callable[[str], object] | None = None,
        metavar: str | None = None,
    ) -> None:
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        self.help = help
        self.convert = convert
        self.metavar = metavar
        self.default: object = False if convert is None else None


class Param:
    """One argument of one command: positional (``--``-less name) or an option with a value.

    ``dest`` is the request field it fills; ``local`` params (``--screenshot``) are for the CLI
    only and never sent. A positional with ``optional`` may be left out; an option is required
    only with ``required``.
    """

    __slots__ = (
        "choices",
        "convert",
        "dest",
        "flag",
        "help",
        "local",
        "metavar",
        "optional",
        "required",
        "switch",
    )

    def __init__(
        self,
        flag: str,
        dest: str,
        help: str,  # noqa: A002
        *,
        convert: Callable[[str], object] = str,
        metavar: str | None = None,
        choices: tuple[str, ...] | None = None,
        required: bool = False,
        optional: bool = False,
        local: bool = False,
        switch: bool = False,
    ) -> None:
        self.flag = flag
        self.dest = dest
        self.help = help
        self.convert = convert
        self.metavar = metavar
        self.choices = choices
        self.required = required
        self.optional = optional
        self.local = local
        self.switch = switch  # an option without a value: present means True

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")


class Command:
    """A command (or a subcommand such as ``apps add``): what it sends and how it runs.

    ``op`` is the request it sends; ``session`` says whether it opens the named session
    (commands that use the session's state); ``timeout`` is its ``--timeout`` default;
    ``desktop`` commands reach the backend: they open the session and wait longer by default;
    ``delivers`` whether its error replies state a delivery (what reached the desktop), shown
    as one ``delivery:`` line (by default the desktop commands; a Jev ``run`` reports its
    steps instead); ``autostart`` whether it may start a daemon; ``check`` rejects argument
    combinations the parsers cannot express (its message becomes a usage error); ``hint`` is
    added to every usage error of this command; ``description`` and ``epilog`` are the longer
    text of its ``--help`` (above and below the arguments; ``help`` is the one line the list of
    commands shows, and the description when there is none); ``confirm`` marks a step only the
    person takes, which runs only from a terminal once they have confirmed it there
    (:mod:`deskhandctl.cli.person`).

    ``handler`` names the function that runs the command, as ``"module:function"``; its module
    is imported only when the command runs. A daemon command's handler is called as
    ``handler(session, args)`` on the session :mod:`deskhandctl.__main__` opened for it (the
    default, :func:`deskhandctl.cli.commands.request`, sends the one request and prints the
    reply); a ``standalone`` command's as ``handler(args)``, and it opens whatever it needs
    itself. ``offline`` commands run in the CLI alone (no daemon, no socket); they and the
    ``own_errors`` commands (``mcp``, whose stdout belongs to its host) are standalone and report
    their own failures, returning the exit code. A command with subcommands needs one of them,
    unless it is ``alone``: then it also runs by itself (``mcp`` serves, ``mcp config`` sets a
    host up).
    """

    __slots__ = (
        "alone",
        "autostart",
        "check",
        "confirm",
        "delivers",
        "description",
        "epilog",
        "handler",
        "help",
        "hint",
        "name",
        "offline",
        "op",
        "options",
        "own_errors",
        "params",
        "positionals",
        "session",
        "standalone",
        "subcommands",
        "timeout",
    )

    def __init__(
        self,
        name: str,
        help: str,  # noqa: A002
        op: str = "",
        params: tuple[Param, ...] = (),
        *,
        session: bool = False,
        desktop: bool = False,
        delivers: bool | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        autostart: bool = True,
        check: Check | None = None,
        subcommands: tuple[Command, ...] = (),
        hint: str = "",
        offline: bool = False,
        confirm: bool = False,
        handler: str = REQUEST_HANDLER,
        standalone: bool = False,
        own_errors: bool = False,
        alone: bool = False,
        description: str = "",
        epilog: str = "",
    ) -> None:
        self.name = name
        self.help = help
        self.op = op or name
        self.params = params
        positionals: list[Param] = []
        self.options: dict[str, Param] = {}
        for param in params:  # one pass: this runs for every command at every start
            if param.flag[:1] == "-":
                self.options[param.flag] = param
            else:
                positionals.append(param)
        self.positionals = tuple(positionals)
        self.session = session or desktop
        self.delivers = desktop if delivers is None else delivers
        self.offline = offline  # runs in the CLI itself: no daemon, no socket
        self.timeout = max(timeout, DESKTOP_TIMEOUT_S) if desktop else timeout
        self.autostart = autostart
        self.check = check
        self.subcommands = {sub.name: sub for sub in subcommands}
        self.hint = hint
        self.confirm = confirm
        self.handler = handler
        self.own_errors = own_errors or offline
        self.standalone = standalone or self.own_errors
        self.alone = alone
        self.description = description or help
        self.epilog = epilog

    @property
    def acts(self) -> bool:
        """Whether this command acts on the desktop with a state id (its outcome may be unknown)."""
        return "--state" in self.options


# ----- argument shapes shared by several commands, and their checks ------------------------------


def _click_target(params: dict[str, object]) -> str | None:
    has_index = params.get("element_index") is not None
    has_x, has_y = params.get("x") is not None, params.get("y") is not None
    if has_index and (has_x or has_y):
        return "give either --index or --x and --y, not both"
    if has_x != has_y:
        return "--x and --y go together"
    if not (has_index or has_x):
        return "say what to click: --index N, or --x X --y Y"
    return None


def _target(*extra: Param) -> tuple[Param, ...]:
    """``--app`` and ``--state``, the action's own params, then ``--handoff`` and
    ``--screenshot``."""
    return (
        Param("--app", "app", "the app, as observed", metavar="APP", required=True),
        Param(
            "--state", "state_id", "the observed state id (single use)", metavar="ID", required=True
        ),
        *extra,
        Param(
            "--handoff",
            "handoff",
            "in jev mode: the token of Jev's planner handoff for this app",
            metavar="TOKEN",
        ),
        Param("--screenshot", "screenshot", _ACTION_SHOT, metavar="FILE", local=True),
    )


def _index_param(help_text: str) -> Param:
    return Param(
        "--index", "element_index", help_text, convert=parse_index, metavar="N", required=True
    )


def _point_param(flag: str, dest: str, help_text: str) -> Param:
    """A required ``X,Y`` option; the request gets ``<dest>_x`` and ``<dest>_y``."""
    return Param(flag, dest, help_text, convert=parse_point, metavar="X,Y", required=True)


_SHOT = "save the screenshot to this file (mode 0600)"
_ACTION_SHOT = "save the screenshot that comes with the action's reply to this file (mode 0600)"
_BUTTONS = ("left", "right", "middle")
_WAYS = ("up", "down", "left", "right")
_SELECTIONS = ("text", "cursor_before", "cursor_after")


def _verify_pair(params: dict[str, object]) -> str | None:
    if (params.get("verify_role") is None) != (params.get("verify_label") is None):
        return "--verify-role and --verify-label go together"
    return None


# ----- mcp config: the hosts it knows, and the checks the table cannot express -----------------
# Here rather than in deskhandctl.setup.mcpconfig, which imports it: the parsers need them, and
# mcpconfig (json, tomllib, difflib, ...) is imported only when 'mcp config' runs.

MCP_HOSTS = ("claude-code", "codex", "cursor", "claude-desktop", "vscode")
"""The agent hosts ``mcp config`` can register Deskhand with, as ``--host`` names them."""
MCP_TITLES = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "cursor": "Cursor",
    "claude-desktop": "Claude Desktop",
    "vscode": "VS Code",
}
MCP_SCOPES = {
    "claude-code": ("user", "project"),
    "codex": ("user", "project"),
    "cursor": ("user", "project"),
    "claude-desktop": ("user",),
    "vscode": ("user", "project"),
}
MCP_DEFAULT_NAME = "deskhand"
_MCP_NAME_MAX = 64
_MCP_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_PLATFORMS = ("linux", "macos")


def _mcp_config_check(params: dict[str, object]) -> str | None:
    """The scope the host has, a name hosts accept, and ``--write`` only for this machine."""
    host, scope = str(params.get("host")), params.get("scope") or "user"
    name = params.get("name")
    if scope not in MCP_SCOPES.get(host, ()):
        return f"{MCP_TITLES.get(host, host)} has no {scope} scope; leave --scope out"
    if isinstance(name, str) and not (
        0 < len(name) <= _MCP_NAME_MAX and _MCP_NAME_CHARS.issuperset(name)
    ):
        return f"--name takes 1 to {_MCP_NAME_MAX} letters, digits, '-' and '_'"
    if params.get("approve_tools") and host != "codex":
        return (
            "--approve-tools is for codex; Claude Code takes its tool permissions on its own "
            "command line (claude -p --allowedTools mcp__deskhand)"
        )
    platform = params.get("platform")
    if params.get("write") and platform is not None:
        from deskhand_d.paths import is_macos  # only for 'mcp config --write --platform'

        running = "macos" if is_macos() else "linux"
        if platform != running:
            return f"--write edits this machine's files: leave --platform out or say {running}"
    return None


def _service_params() -> tuple[Param, ...]:
    return (
        Param(
            "--dry-run",
            "dry_run",
            "print the files and commands, change nothing",
            switch=True,
            local=True,
        ),
        Param(
            "--platform",
            "platform",
            "render for this platform (default: the one this runs on)",
            choices=_PLATFORMS,
            local=True,
        ),
    )


_SERVICE = "deskhandctl.setup.service:"
SERVICE_DESCRIPTION = (
    "Register deskhand-d with this user's service manager (systemd or launchd) so that it "
    "starts on demand, or remove it again. Without the service, deskhandctl starts the daemon "
    "itself when a command needs it."
)
MCP_DESCRIPTION = (
    "Serve Deskhand's tools to an AI agent host as an MCP server on stdin and stdout "
    "(newline-delimited JSON-RPC; logs go to stderr). The host starts this command itself, and "
    "each connection it makes is a daemon session of its own, named after the host. When a tool "
    "needs the person's answer (consent, an approval), the question reaches the host as a form "
    "if the host supports that (MCP elicitation), and is refused otherwise."
)
MCP_EPILOG = (
    "Like other deskhandctl commands, mcp starts the daemon when none is running, unless "
    "--no-autostart is given or DESKHAND_NO_AUTOSTART=1 is set. 'deskhandctl mcp config --host "
    "HOST' prints the entry that registers this server with a host (--write adds it to the "
    "host's file). See docs/mcp.md."
)


# ----- the hints that usage errors of apps, grants and run add -----------------------------------

APPS_HINT = (
    "deskhandctl apps lists the allowlist ('apps list') or adds exactly one app to it "
    "('apps add NAME', one app per command). It never removes or replaces apps: to do that, "
    "edit the file that 'deskhandctl apps list' names."
)

RUN_HINT = (
    "deskhandctl run asks Jev (in a session in jev mode) to do one small goal in one app, step "
    "by step: it executes unless you give --dry-run. Done means verified only with "
    "--verify-role and --verify-label. --text, --key and --direction are what Jev may use for "
    "typing, a key press or scrolling; it never invents them."
)

GRANTS_HINT = (
    "deskhandctl grants shows the apps you have always allowed ('grants list'), withdraws that "
    "('grants revoke APP': any work in progress is cancelled and the backend restarts) or gives "
    "it back ('grants restore APP'). New grants come only from answering a consent question."
)


# ----- the tables --------------------------------------------------------------------------------

OPTIONS = (
    Option("--json", "print the daemon's result as one JSON object on stdout"),
    Option(
        "--socket",
        "the daemon's socket (default: $DESKHAND_SOCKET, else the per-user default)",
        convert=str,
        metavar="PATH",
    ),
    Option(
        "--timeout",
        f"give up on any single answer after this long (default {DEFAULT_TIMEOUT_S:g}; "
        f"{DESKTOP_TIMEOUT_S:g} for doctor and the commands that use the desktop)",
        convert=parse_timeout,
        metavar="SECONDS",
    ),
    Option(
        "--no-autostart",
        "do not start the daemon when it is not running (also DESKHAND_NO_AUTOSTART=1)",
    ),
    Option(
        "--session",
        "the daemon session to use (default: $DESKHAND_SESSION, else cli-<uid>; '' for a "
        "throwaway one)",
        convert=parse_session,
        metavar="NAME",
    ),
)
OPTION_BY_FLAG = {option.flag: option for option in OPTIONS}


COMMANDS: dict[str, Command] = {
    cmd.name: cmd
    for cmd in (
        Command(
            "status",
            "show the daemon's version, uptime, clients and request statistics",
            handler=_ON_SESSION + "status",
        ),
        Command(
            "ping", "check that the daemon answers, and how fast", handler=_ON_SESSION + "ping"
        ),
        Command(
            "shutdown",
            "ask the daemon to stop (never starts one)",
            autostart=False,
            handler=_ON_SESSION + "shutdown",
        ),
        Command(
            "doctor",
            "check the computer-use backend without acting on the desktop: its handshake, "
            "and for Sky one read-only list_apps",
            params=(
                Param(
                    "--backend",
                    "backend",
                    "check this backend instead of the daemon's own (a throwaway process)",
                    choices=("auto", "sky", "atspi", "sim", "command"),
                ),
            ),
            timeout=DESKTOP_TIMEOUT_S,
            handler=_ON_SESSION + "doctor",
        ),
        Command(
            "observe",
            "show an app's accessibility tree and a fresh state id for one action",
            "get_app_state",
            (
                Param("APP", "app", "the app: name, bundle id or path"),
                Param("--screenshot", "screenshot", _SHOT, metavar="FILE", local=True),
            ),
            desktop=True,
            handler=_ON_SESSION + "observe",
        ),
        Command(
            "click",
            "click an element (--index) or a point in the screenshot (--x, --y)",
            "click",
            _target(
                Param("--index", "element_index", "the element", convert=parse_index, metavar="N"),
                Param("--x", "x", "screenshot x coordinate", convert=parse_number, metavar="X"),
                Param("--y", "y", "screenshot y coordinate", convert=parse_number, metavar="Y"),
                Param("--count", "click_count", "1, 2 or 3", convert=parse_count, metavar="N"),
                Param("--button", "mouse_button", "mouse button", choices=_BUTTONS),
            ),
            check=_click_target,
            desktop=True,
        ),
        Command(
            "type",
            "type text into the focused element",
            "type_text",
            _target(Param("TEXT", "text", "the text to type", convert=parse_text)),
            desktop=True,
        ),
        Command(
            "press",
            "press a key or key combination (e.g. Return, super+a)",
            "press_key",
            _target(Param("KEY", "key", "the key", convert=parse_text)),
            desktop=True,
        ),
        Command(
            "scroll",
            "scroll an element",
            "scroll",
            _target(
                _index_param("the element to scroll"),
                Param("--direction", "direction", "which way", choices=_WAYS, required=True),
                Param("--pages", "pages", "how far (default 1)", convert=parse_pages, metavar="P"),
            ),
            desktop=True,
        ),
        Command(
            "set-value",
            "set an element's value",
            "set_value",
            _target(_index_param("the element"), Param("VALUE", "value", "the new value")),
            desktop=True,
        ),
        Command(
            "select-text",
            "select text in an element, or put the cursor next to it",
            "select_text",
            _target(
                _index_param("the element"),
                Param("TEXT", "text", "the text to select"),
                Param("--prefix", "prefix", "text just before it", metavar="P"),
                Param("--suffix", "suffix", "text just after it", metavar="S"),
                Param("--selection", "selection", "what to select", choices=_SELECTIONS),
            ),
            desktop=True,
        ),
        Command(
            "drag",
            "drag from one screenshot point to another",
            "drag",
            _target(
                _point_param("--from", "from", "start point"),
                _point_param("--to", "to", "end point"),
            ),
            desktop=True,
        ),
        Command(
            "secondary-action",
            "perform one of an element's secondary actions (as the observation lists them)",
            "perform_secondary_action",
            _target(
                _index_param("the element"),
                Param("ACTION", "action", "its name", convert=parse_text),
            ),
            desktop=True,
        ),
        Command("list-apps", "list the apps the backend can see", "list_apps", desktop=True),
        Command(
            "launch",
            "launch an app",
            "launch_app",
            (Param("APP", "app", "the app: name, bundle id or path"),),
            desktop=True,
        ),
        Command(
            "mode",
            "show the session's mode, or set it",
            "mode_get",
            (Param("MODE", "mode", "the mode to set", choices=("native", "jev"), optional=True),),
            session=True,
        ),
        Command(
            "turn",
            "begin or end a turn (ending one retires its state ids)",
            subcommands=(
                Command("begin", "start a new turn", "turn_begin", session=True),
                Command("end", "end the current turn", "turn_end", session=True),
            ),
        ),
        Command(
            "session",
            "manage this CLI's daemon session",
            subcommands=(
                Command(
                    "close",
                    "end the session now (its state ids go, its queued work is cancelled)",
                    "session_close",
                    session=True,
                ),
            ),
        ),
        Command(
            "apps",
            "show the app allowlist, or add one app to it",
            subcommands=(
                Command("list", "show the allowlist and its file", "apps_list", hint=APPS_HINT),
                Command(
                    "add",
                    "add one app to the allowlist (from your terminal, once you confirm)",
                    "apps_add",
                    (Param("NAME", "app", "the app's name"),),
                    hint=APPS_HINT,
                    confirm=True,
                ),
            ),
            hint=APPS_HINT,
        ),
        Command(
            "run",
            "run a Jev task on one app (jev mode; executes unless --dry-run)",
            "run",
            (
                Param("--app", "app", "the app", metavar="APP", required=True),
                Param("GOAL", "goal", "what to achieve, in a sentence", convert=parse_text),
                Param(
                    "--dry-run",
                    "dry_run",
                    "decide one step, show it, dispatch nothing",
                    switch=True,
                ),
                Param(
                    "--max-steps",
                    "max_steps",
                    "at most this many steps (1-20, default 5)",
                    convert=steps,
                    metavar="N",
                ),
                Param(
                    "--verify-role",
                    "verify_role",
                    "done when an element has this role...",
                    metavar="ROLE",
                    local=True,
                ),
                Param(
                    "--verify-label",
                    "verify_label",
                    "...and exactly this label",
                    metavar="LABEL",
                    local=True,
                ),
                Param("--plan", "plan", "the plan Jev should follow, from you", metavar="PLAN"),
                Param("--text", "text", "text Jev may type or set", metavar="TEXT"),
                Param("--key", "key", "a key Jev may press", metavar="KEY"),
                Param(
                    "--full-trace",
                    "full_trace",
                    "record everything about this run (asks you first)",
                    switch=True,
                ),
                Param(
                    "--direction",
                    "direction",
                    "a direction Jev may scroll",
                    choices=_WAYS,
                    metavar="DIR",
                ),
            ),
            desktop=True,
            delivers=False,
            timeout=240.0,
            check=_verify_pair,
            hint=RUN_HINT,
            handler=_ON_SESSION + "run_task",
        ),
        # The commands that run in the CLI itself and never send a request of their own
        # (demo starts a private daemon): every dest is local.
        Command(
            "ax",
            "work with accessibility-tree text offline",
            subcommands=(
                Command(
                    "parse",
                    "parse a tree from a file and show its elements, focus and Jev's candidates",
                    "",
                    (
                        Param("FILE", "file", "the tree text ('-' for stdin)", local=True),
                        Param(
                            "--goal",
                            "goal",
                            "rank candidates for this goal",
                            metavar="GOAL",
                            local=True,
                        ),
                    ),
                    offline=True,
                    handler="deskhandctl.cli.offline:run_offline",
                ),
            ),
        ),
        Command(
            "trace",
            "read Jev run traces offline",
            subcommands=(
                Command(
                    "list",
                    "list the trace files, newest first",
                    "",
                    offline=True,
                    handler="deskhandctl.cli.tracecmd:run_trace",
                ),
                Command(
                    "show",
                    "show a trace as a per-step timeline",
                    "",
                    (Param("PATH", "path", "the trace file", local=True),),
                    offline=True,
                    handler="deskhandctl.cli.tracecmd:run_trace",
                ),
                Command(
                    "analyze",
                    "find the first step where the run went wrong, and whether it is complete",
                    "",
                    (Param("PATH", "path", "the trace file", local=True),),
                    offline=True,
                    handler="deskhandctl.cli.tracecmd:run_trace",
                ),
            ),
        ),
        Command(
            "audit",
            "show the latest dispatches from the audit log, each with what reached the desktop",
            "",
            (
                Param(
                    "--last",
                    "last",
                    "how many dispatches to show (default 20)",
                    convert=parse_last,
                    metavar="N",
                    local=True,
                ),
            ),
            offline=True,
            handler="deskhandctl.cli.auditcmd:run_audit",
        ),
        Command(
            "eval",
            "run the built-in Jev cases against the real, paid API (needs --live)",
            "",
            (
                Param(
                    "--live",
                    "live",
                    "really send the cases to the Jev API",
                    switch=True,
                    local=True,
                ),
            ),
            offline=True,
            handler="deskhandctl.cli.offline:run_offline",
        ),
        Command(
            "demo",
            "do 6 + 7 = in a real Calculator (a private desktop if none) and save a screenshot",
            "",
            (
                Param(
                    "--screenshot",
                    "screenshot",
                    "PNG to write (default ./deskhand-demo.png)",
                    local=True,
                ),
                Param(
                    "--sim",
                    "sim",
                    "use the simulated desktop even where a real one could be had",
                    switch=True,
                    local=True,
                ),
                Param(
                    "--wayland",
                    "wayland",
                    "start a private Wayland desktop (headless GNOME compositor) rather than Xvfb "
                    "when there is no desktop",
                    switch=True,
                    local=True,
                ),
            ),
            offline=True,
            handler="deskhandctl.cli.demo:run_demo",
        ),
        Command(
            "grants",
            "show, revoke or restore the apps you have always allowed",
            subcommands=(
                Command(
                    "list", "show saved grants and their file", "grants_list", hint=GRANTS_HINT
                ),
                Command(
                    "revoke",
                    "withdraw a saved grant (cancels work in progress, restarts the backend)",
                    "grants_revoke",
                    (Param("APP", "app", "the app's name or executable path, as listed"),),
                    hint=GRANTS_HINT,
                ),
                Command(
                    "restore",
                    "give back a revoked saved grant (from your terminal, once you confirm)",
                    "grants_restore",
                    (Param("APP", "app", "the app's name or executable path, as listed"),),
                    hint=GRANTS_HINT,
                    confirm=True,
                ),
            ),
            hint=GRANTS_HINT,
        ),
        Command(
            "stop",
            "emergency stop: cancel everything and lock the daemon (never starts one)",
            "stop",
            autostart=False,
        ),
        Command(
            "unlock",
            "release the emergency stop (from your terminal, once you confirm)",
            "unlock",
            confirm=True,
        ),
        Command(
            "questions",
            "answer here the questions of agents whose clients cannot ask you (on a terminal)",
            "questions_watch",
            (
                Param(
                    "--once",
                    "once",
                    "answer the questions waiting now, then exit",
                    switch=True,
                    local=True,
                ),
            ),
            timeout=QUESTIONS_TIMEOUT_S,
            handler="deskhandctl.cli.console:run_console",
            standalone=True,
        ),
        Command(
            "service",
            "install or uninstall the systemd/launchd user service",
            subcommands=(
                Command(
                    "install",
                    "hand deskhand-d to the service manager, which starts it on demand",
                    "",
                    _service_params(),
                    offline=True,
                    handler=_SERVICE + "install",
                    description=SERVICE_DESCRIPTION,
                ),
                Command(
                    "uninstall",
                    "stop the service and remove its files (config and state are kept)",
                    "",
                    _service_params(),
                    offline=True,
                    handler=_SERVICE + "uninstall",
                    description=SERVICE_DESCRIPTION,
                ),
            ),
            description=SERVICE_DESCRIPTION,
        ),
        Command(
            "mcp",
            "serve Deskhand to an AI agent host over MCP on stdio, or set a host up (mcp config)",
            "",
            subcommands=(
                Command(
                    "config",
                    "print, or write, the entry that lets an agent host start 'deskhandctl mcp'",
                    "",
                    (
                        Param(
                            "--host",
                            "host",
                            "the agent host",
                            choices=MCP_HOSTS,
                            required=True,
                            local=True,
                        ),
                        Param(
                            "--scope",
                            "scope",
                            "user: every project (default); project: the current directory's "
                            "project (not for claude-desktop)",
                            choices=("user", "project"),
                            local=True,
                        ),
                        Param(
                            "--name",
                            "name",
                            f"the server's name (default {MCP_DEFAULT_NAME})",
                            metavar="NAME",
                            local=True,
                        ),
                        Param(
                            "--write",
                            "write",
                            "edit the host's file (a backup is kept)",
                            switch=True,
                            local=True,
                        ),
                        Param(
                            "--platform",
                            "platform",
                            "print for this platform's paths (default: the one this runs on; "
                            "not with --write)",
                            choices=_PLATFORMS,
                            local=True,
                        ),
                        Param(
                            "--approve-tools",
                            "approve_tools",
                            "codex only: let Codex run Deskhand's tools without its own "
                            "approval, as 'codex exec' needs (Deskhand still asks the person "
                            "before it touches an app)",
                            switch=True,
                            local=True,
                        ),
                    ),
                    offline=True,
                    check=_mcp_config_check,
                    handler="deskhandctl.setup.mcpconfig:configure",
                ),
            ),
            own_errors=True,
            alone=True,
            handler="deskhandctl.facade.server:run",
            description=MCP_DESCRIPTION,
            epilog=MCP_EPILOG,
        ),
    )
}


def leaf(name: str) -> Command:
    """The command ``name`` names: ``"status"``, or ``"apps add"`` for a subcommand."""
    head, _, sub = name.partition(" ")
    command = COMMANDS[head]
    return command.subcommands[sub] if sub else command


# ----- what a command line parses to -------------------------------------------------------------


class Args:
    """A parsed command line.

    ``command`` is the command's name (``"apps add"`` for a subcommand), ``params`` its own
    arguments keyed by request field (None when not given), and one attribute per global option
    (``timeout`` None when not given).
    """

    __slots__ = (
        "command",
        "json",
        "no_autostart",
        "params",
        "session",
        "socket",
        "timeout",
    )

    def __init__(
        self,
        command: str,
        values: dict[str, object],
        params: dict[str, object] | None = None,
    ) -> None:
        self.command = command
        self.params: dict[str, object] = params or {}
        self.json = bool(values.get("json", False))
        self.no_autostart = bool(values.get("no_autostart", False))
        socket = values.get("socket")
        self.socket = socket if isinstance(socket, str) else None
        session = values.get("session")
        self.session = session if isinstance(session, str) else None
        timeout = values.get("timeout")
        self.timeout = timeout if isinstance(timeout, float) else None

    def as_dict(self) -> dict[str, object]:
        """Every attribute by name (the tests compare parsers with it)."""
        return {name: getattr(self, name) for name in self.__slots__}

"""The shapes of ``deskhandctl``'s grammar tables: global options, commands and their arguments.

Plain classes with ``__slots__`` (no dataclasses: this is on every command's start-up path).
:mod:`deskhandctl.grammar` holds the tables built from them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Check = Callable[[dict[str, object]], str | None]

DEFAULT_TIMEOUT_S = 10.0
DESKTOP_TIMEOUT_S = 60.0
"""Default ``--timeout`` for commands that may start the backend or wait on it."""


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
    """A command (or an ``apps``/``turn`` subcommand): what it sends and how it runs.

    ``op`` is the request it sends; ``session`` says whether it opens the named session
    (commands that use the session's state); ``timeout`` is its ``--timeout`` default;
    ``desktop`` commands reach the backend: they open the session and wait longer by default;
    ``autostart`` whether it may start a daemon; ``check`` rejects argument combinations the
    parsers cannot express (its message becomes a usage error); ``hint`` is added to every usage
    error of this command.
    """

    __slots__ = (
        "autostart",
        "check",
        "help",
        "hint",
        "name",
        "offline",
        "op",
        "options",
        "params",
        "positionals",
        "session",
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
        timeout: float = DEFAULT_TIMEOUT_S,
        autostart: bool = True,
        check: Check | None = None,
        subcommands: tuple[Command, ...] = (),
        hint: str = "",
        offline: bool = False,
    ) -> None:
        self.name = name
        self.help = help
        self.op = op or name
        self.params = params
        self.positionals = tuple(p for p in params if p.positional)
        self.options = {p.flag: p for p in params if not p.positional}
        self.session = session or desktop
        self.offline = offline  # runs in the CLI itself: no daemon, no socket
        self.timeout = max(timeout, DESKTOP_TIMEOUT_S) if desktop else timeout
        self.autostart = autostart
        self.check = check
        self.subcommands = {sub.name: sub for sub in subcommands}
        self.hint = hint

    @property
    def acts(self) -> bool:
        """Whether this command acts on the desktop with a state id (its outcome may be unknown)."""
        return "--state" in self.options

"""The command-line grammar of ``deskhandctl``: one table, two parsers over it.

:data:`OPTIONS` and :data:`COMMANDS` describe the grammar once. :func:`parse` first tries a
small hand-written parser that understands well-formed command lines only; anything else
(``--help``, a misspelt option, a bad value, ``--``) goes to an ``argparse`` parser built from
the same table, which prints help or a usage error exactly as argparse does. Why two: on a
slow machine, importing argparse (with ``gettext`` and ``locale``) and building the parser cost
about as much as starting Python itself, and ``deskhandctl status`` should start fast. A test
checks that both parsers agree wherever the fast one gives an answer.

Global options are accepted before and after the command. Everything after ``service`` is
passed untouched to ``deskhandctl.service.main``.
"""

from __future__ import annotations

import sys

from deskhand_d import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

DEFAULT_TIMEOUT_S = 10.0
PROG = "deskhandctl"
PASSTHROUGH = "service"


def parse_timeout(text: str) -> float:
    """``--timeout`` values: a number of seconds greater than zero."""
    value = float(text)  # ValueError for anything else
    if not value > 0 or value == float("inf"):
        raise ValueError("must be more than 0 seconds")
    return value


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
        default: object = None,
    ) -> None:
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        self.help = help
        self.convert = convert
        self.metavar = metavar
        self.default = False if convert is None else default


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
        f"give up on any single answer after this long (default {DEFAULT_TIMEOUT_S:g})",
        convert=parse_timeout,
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT_S,
    ),
    Option(
        "--no-autostart",
        "do not start the daemon when it is not running (also DESKHAND_NO_AUTOSTART=1)",
    ),
)
_BY_FLAG = {option.flag: option for option in OPTIONS}

COMMANDS = {
    "status": "show the daemon's version, uptime, clients and request statistics",
    "ping": "check that the daemon answers, and how fast",
    "shutdown": "ask the daemon to stop (never starts one)",
    "doctor": "check the computer-use backend: handshake only, never touches the desktop",
    PASSTHROUGH: "install or uninstall the systemd/launchd user service (see 'service --help')",
}

DESCRIPTION = "Talk to the Deskhand daemon (deskhand-d) running for this user."
EPILOG = (
    "Exit codes: 0 ok, 1 error reply, 2 usage, 69 daemon not running, 75 timeout, "
    "76 protocol mismatch, 77 permission refused. See docs/cli.md."
)


class Args:
    """A parsed command line: ``command``, one attribute per option, ``rest`` for service."""

    __slots__ = ("command", "json", "no_autostart", "rest", "socket", "timeout")

    def __init__(self, command: str, values: dict[str, object], rest: list[str]) -> None:
        self.command = command
        self.rest = rest
        self.json = bool(values.get("json", False))
        self.no_autostart = bool(values.get("no_autostart", False))
        socket = values.get("socket")
        self.socket = socket if isinstance(socket, str) else None
        timeout = values.get("timeout", DEFAULT_TIMEOUT_S)
        self.timeout = timeout if isinstance(timeout, float) else DEFAULT_TIMEOUT_S

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


def parse(argv: list[str]) -> Args:
    """Parse ``argv``; on ``--help``, ``--version`` or a usage error print and raise SystemExit."""
    if argv[:1] == ["--version"]:
        print(f"{PROG} {__version__}")
        raise SystemExit(0)
    args = parse_fast(argv)
    if args is not None:
        return args
    return parse_slow(argv)


def parse_fast(argv: list[str]) -> Args | None:
    """The common, well-formed cases; None means "let argparse handle (and explain) this"."""
    values: dict[str, object] = {}
    command: str | None = None
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") and command is None:
            if word not in COMMANDS:
                return None
            command = word
            if command == PASSTHROUGH:
                return Args(command, values, argv[i:])
            continue
        name, has_value, value = word.partition("=")
        option = _BY_FLAG.get(name)
        if option is None:
            return None  # --help, --version after the command, typos, stray words
        if option.convert is None:
            if has_value:
                return None
            values[option.dest] = True
            continue
        if not has_value:
            if i >= len(argv) or argv[i].startswith("-"):
                return None
            value = argv[i]
            i += 1
        try:
            values[option.dest] = option.convert(value)
        except ValueError:
            return None
    if command is None:
        return None
    return Args(command, values, [])


def parse_slow(argv: list[str]) -> Args:
    """Parse with argparse: prints help and usage errors, exits 0 or 2 through SystemExit."""
    namespace = build_parser().parse_args(argv)
    values = vars(namespace)
    return Args(values.pop("command"), values, list(values.pop("rest", [])))


def build_parser() -> argparse.ArgumentParser:
    """The argparse twin of :func:`parse_fast`, built from the same table."""
    import argparse

    formatter = _formatter_class()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=formatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {__version__}", help="print the version"
    )
    _add_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in COMMANDS.items():
        if name == PASSTHROUGH:
            sub = commands.add_parser(
                name,
                help=text,
                add_help=False,
                formatter_class=formatter,
                # No option prefix: every word after 'service' (even --help) goes to its parser.
                prefix_chars="\0",
            )
            sub.add_argument("rest", nargs=argparse.REMAINDER)
        else:
            sub = commands.add_parser(
                name, help=text, description=text, formatter_class=formatter, allow_abbrev=False
            )
            _add_options(sub, top=False)
    return parser


def _add_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    import argparse

    for option in OPTIONS:
        # Below the command the defaults are SUPPRESS, so an option given before the command
        # is not reset by the subparser's default.
        default = option.default if top else argparse.SUPPRESS
        if option.convert is None:
            parser.add_argument(option.flag, action="store_true", default=default, help=option.help)
        else:
            parser.add_argument(
                option.flag,
                type=_argparse_type(option.convert),
                metavar=option.metavar,
                default=default,
                help=option.help,
            )


def _argparse_type(convert: Callable[[str], object]) -> Callable[[str], object]:
    import argparse

    def checked(text: str) -> object:
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {exc}") from None

    return checked


def _formatter_class() -> type[argparse.HelpFormatter]:
    import argparse
    import os

    class Formatter(argparse.HelpFormatter):
        """argparse's help formatter with the width given, so it does not import shutil."""

        def __init__(self, prog: str) -> None:
            try:
                width = int(os.environ["COLUMNS"])
            except (KeyError, ValueError):
                try:
                    width = os.get_terminal_size(sys.stdout.fileno()).columns
                except (OSError, ValueError, AttributeError):
                    width = 80
            super().__init__(prog, width=width - 2)

    return Formatter

"""The command line of ``deskhandctl``: two parsers over one grammar (:mod:`deskhandctl.grammar`).

:func:`parse` first tries a small hand-written parser that understands well-formed command lines
only; anything else (``--help``, a misspelt option, a bad value, a missing argument, ``--``) goes
to an ``argparse`` parser built from the same tables, which prints help or a usage error exactly
as argparse does. Why two: on a slow machine, importing argparse (with ``gettext`` and
``locale``) and building the parser cost about as much as starting Python itself, and
``deskhandctl status`` should start fast. A test checks that both parsers agree wherever the fast
one gives an answer.

The argparse twin lives in :mod:`deskhandctl.argparser`. Global options are accepted before
and after the command; a command's own options come after it. Everything after ``service`` is
passed untouched to ``deskhandctl.service.main``.
"""

from __future__ import annotations

from deskhand_d import __version__
from deskhandctl.grammar import COMMANDS, DEFAULT_TIMEOUT_S, OPTION_BY_FLAG, PASSTHROUGH, PROG

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from deskhandctl.grammar import Command, Param

__all__ = ["DEFAULT_TIMEOUT_S", "PASSTHROUGH", "Args", "parse"]

DESCRIPTION = "Talk to the Deskhand daemon (deskhand-d) running for this user."
EPILOG = (
    "Exit codes: 0 ok, 1 error reply or failed action, 2 usage, 69 daemon not running, "
    "73 screenshot not saved, 75 timeout, 76 protocol mismatch, 77 permission refused, "
    "130 interrupted. See docs/cli.md."
)


class Args:
    """A parsed command line.

    ``command`` is the command's name (``"apps add"`` for a subcommand), ``params`` its own
    arguments keyed by request field (None when not given), ``rest`` the words after
    ``service``, and one attribute per global option (``timeout`` None when not given).
    """

    __slots__ = (
        "command",
        "json",
        "no_autostart",
        "params",
        "rest",
        "session",
        "socket",
        "timeout",
    )

    def __init__(
        self,
        command: str,
        values: dict[str, object],
        params: dict[str, object] | None = None,
        rest: list[str] | None = None,
    ) -> None:
        self.command = command
        self.params: dict[str, object] = params or {}
        self.rest: list[str] = rest or []
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
    params: dict[str, object] = {}
    words: list[str] = []
    command: Command | None = None
    name = ""
    count = len(argv)
    i = 0
    while i < count:
        word = argv[i]
        i += 1
        if word[:1] != "-":
            if command is None:
                command = COMMANDS.get(word)
                if command is None:
                    return None
                name = word
                if word == PASSTHROUGH:
                    return Args(word, values, rest=argv[i:])
            elif command.subcommands:
                command = command.subcommands.get(word)
                if command is None:
                    return None
                name = f"{name} {word}"
            else:
                words.append(word)
            continue
        flag, has_value, value = word.partition("=")
        option = OPTION_BY_FLAG.get(flag)
        param: Param | None = None
        if option is not None:
            if option.convert is None:
                if has_value:
                    return None
                values[option.dest] = True
                continue
            convert = option.convert
        else:
            param = None if command is None else command.options.get(flag)
            if param is None:
                return None  # --help, --version after the command, typos, stray words
            if param.switch:
                if has_value:
                    return None
                params[param.dest] = True
                continue
            convert = param.convert
        if not has_value:
            if i >= count or argv[i][:1] == "-":
                return None
            value = argv[i]
            i += 1
        try:
            converted = convert(value)
        except ValueError:
            return None
        if param is None:
            values[option.dest] = converted  # type: ignore[union-attr]
        elif param.choices is not None and converted not in param.choices:
            return None
        else:
            params[param.dest] = converted
    if command is None or command.subcommands:
        return None
    return _finish(command, name, values, params, words)


def _finish(
    command: Command,
    name: str,
    values: dict[str, object],
    given: dict[str, object],
    words: list[str],
) -> Args | None:
    """Place positionals, apply defaults, check requirements; None when anything is off."""
    positionals = command.positionals
    if len(words) > len(positionals):
        return None
    params: dict[str, object] = dict.fromkeys(p.dest for p in command.params)
    params.update(given)
    for index, param in enumerate(positionals):
        if index >= len(words):
            if not param.optional:
                return None
            continue
        try:
            converted = param.convert(words[index])
        except ValueError:
            return None
        if param.choices is not None and converted not in param.choices:
            return None
        params[param.dest] = converted
    for param in command.options.values():
        if param.required and params[param.dest] is None:
            return None
    if command.check is not None and command.check(params) is not None:
        return None
    return Args(name, values, params)


def parse_slow(argv: list[str]) -> Args:
    """Parse with argparse: prints help and usage errors, exits 0 or 2 through SystemExit."""
    from deskhandctl.argparser import parse_slow as parse_with_argparse

    return parse_with_argparse(argv)


def build_parser() -> argparse.ArgumentParser:
    """The argparse twin of :func:`parse_fast`, built from the same tables."""
    from deskhandctl.argparser import build

    return build()[0]

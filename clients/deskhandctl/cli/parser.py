"""Reading ``deskhandctl``'s command line into :class:`~deskhandctl.cli.grammar.Args`.

:func:`parse` first tries :func:`parse_fast`, a small hand-written parser over the grammar table
that understands well-formed command lines only; anything else (``--help``, a misspelt option,
a bad value, a missing argument, ``--``) goes to :func:`deskhandctl.cli.usage.parse_slow`, which
builds argparse for the command concerned and prints help or a usage error exactly as argparse
does. Why two: on a slow machine, importing argparse (with ``gettext`` and ``locale``) and
building a parser cost about as much as starting Python itself, and ``deskhandctl status``
should start fast. A test checks that both agree wherever the fast one gives an answer.

Global options are accepted before and after the command; a command's own options come after
it (after its subcommand, where it has one). A command with subcommands needs one, unless the
table marks it ``alone`` (``mcp`` runs by itself and has ``mcp config``).
"""

from __future__ import annotations

from deskhand_d import __version__
from deskhandctl.cli.grammar import COMMANDS, OPTION_BY_FLAG, PROG, Args

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Command, Param

__all__ = ["parse", "parse_fast"]


def parse(argv: list[str]) -> Args:
    """Parse ``argv``; on ``--help``, ``--version`` or a usage error print and raise SystemExit."""
    if argv[:1] == ["--version"]:
        print(f"{PROG} {__version__}")
        raise SystemExit(0)
    args = parse_fast(argv)
    if args is not None:
        return args
    from deskhandctl.cli.usage import parse_slow  # argparse: help and usage errors only

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
    if command is None or (command.subcommands and not command.alone):
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

"""Help and usage errors: argparse, built from the grammar table for the command concerned.

Imported only when :func:`deskhandctl.cli.parser.parse_fast` declines a command line (``--help``,
usage errors, unusual spellings such as ``--``), so argparse, gettext and locale stay off the
common path. Only the commands that the command line names get their arguments; every other
command is an empty subparser, there so that the top-level help lists it and a misspelt name is
answered with the full list of choices. Usage errors print the usage of the command concerned,
plus its hint (``apps`` explains what it never does), and exit 2 through ``SystemExit`` as
argparse does.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, NoReturn

from deskhand_d import __version__
from deskhandctl.cli.grammar import (
    COMMANDS,
    DESCRIPTION,
    EPILOG,
    OPTIONS,
    PROG,
    Args,
    leaf,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from deskhandctl.cli.grammar import Command, Param


class Parser(argparse.ArgumentParser):
    """argparse's parser, adding the command's hint (if any) to its usage errors."""

    hint = ""

    def error(self, message: str) -> NoReturn:
        """Print usage and ``message`` (and the hint) to stderr; exit 2."""
        super().error(f"{message}\n{self.hint}" if self.hint else message)


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


def parse_slow(argv: list[str]) -> Args:
    """Parse ``argv`` with argparse; help and usage errors leave through SystemExit."""
    parser, by_name = build(argv)
    namespace, extras = parser.parse_known_args(argv)
    values = vars(namespace)
    name = str(values.pop("command"))
    sub = values.pop("subcommand", None)
    if sub is not None:
        name = f"{name} {sub}"
    target = by_name.get(name, parser)
    if extras:
        target.error(f"unrecognized arguments: {' '.join(extras)}")
    options = {o.dest: values.pop(o.dest) for o in OPTIONS if o.dest in values}
    check = leaf(name).check
    problem = None if check is None else check(values)
    if problem is not None:
        target.error(problem)
    return Args(name, options, values)


def build(argv: Collection[str]) -> tuple[Parser, dict[str, Parser]]:
    """The parser for ``argv``, and the parser of each command it built in full, by name (for
    usage errors found after parsing).

    A command (or subcommand) is built in full when its name is one of the words of ``argv``:
    argparse chooses a subparser only by a word equal to its name, so the command it will
    choose is always among them.
    """
    words = set(argv)
    parser = Parser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=Formatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {__version__}", help="print the version"
    )
    _add_options(parser, top=True)
    by_name: dict[str, Parser] = {}
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for name, command in COMMANDS.items():
        if name not in words:
            _placeholder(commands, command)
            continue
        sub = _command_parser(commands, command)
        by_name[name] = sub
        if command.subcommands:
            # An 'alone' command (mcp) also runs without one of its subcommands.
            nested = sub.add_subparsers(
                dest="subcommand",
                required=not command.alone,
                metavar="[ACTION]" if command.alone else "ACTION",
                parser_class=Parser,
            )
            for child in command.subcommands.values():
                if child.name in words:
                    by_name[f"{name} {child.name}"] = _command_parser(nested, child)
                else:
                    _placeholder(nested, child)
    return parser, by_name


def _placeholder(commands: argparse._SubParsersAction[Parser], command: Command) -> None:
    """A command that ``argv`` does not name: listed (name and help), never parsed with."""
    commands.add_parser(command.name, help=command.help, add_help=False)


def _command_parser(commands: argparse._SubParsersAction[Parser], command: Command) -> Parser:
    sub = commands.add_parser(
        command.name,
        help=command.help,
        description=command.description,
        epilog=command.epilog or None,
        formatter_class=Formatter,
        allow_abbrev=False,
    )
    sub.hint = command.hint
    _add_options(sub, top=False)
    for param in command.params:
        _add_param(sub, param)
    return sub


def _add_param(parser: Parser, param: Param) -> None:
    convert = _argparse_type(param.convert)
    if param.positional:
        parser.add_argument(
            param.dest,
            metavar=param.flag,
            type=convert,
            choices=param.choices,
            nargs="?" if param.optional else None,
            help=param.help,
        )
    elif param.switch:
        parser.add_argument(
            param.flag, dest=param.dest, action="store_const", const=True, help=param.help
        )
    else:
        parser.add_argument(
            param.flag,
            dest=param.dest,
            metavar=param.metavar,
            type=convert,
            choices=param.choices,
            required=param.required,
            help=param.help,
        )


def _add_options(parser: Parser, *, top: bool) -> None:
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
    def checked(text: str) -> object:
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {exc}") from None

    return checked

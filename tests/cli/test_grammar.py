"""The grammar table: its request fields are the protocol's, and both parsers read every valid line.

Valid command lines are generated from the table itself (every command, options in any order,
``--flag=value`` or ``--flag value``, global options anywhere), so a new command is covered as
soon as it is in the table.
"""

from __future__ import annotations

import msgspec
import pytest
from deskhandctl.cli.commands import op_for, request_fields
from deskhandctl.cli.grammar import COMMANDS, Command, Param, leaf
from deskhandctl.cli.parser import parse_fast
from deskhandctl.cli.usage import parse_slow
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from deskhand_d.protocol import requests

# Every command line's command: each subcommand, and a command itself when it has none or is
# 'alone' (mcp runs by itself too).
LEAVES = [
    f"{name} {sub}" if sub else name
    for name, command in COMMANDS.items()
    for sub in [*(command.subcommands or [""]), *([""] if command.alone else [])]
]
STRUCTS = {
    cls.__struct_config__.tag: cls
    for cls in vars(requests).values()
    if isinstance(cls, type)
    and issubclass(cls, msgspec.Struct)
    and isinstance(cls.__struct_config__.tag, str)
}

# Valid spellings per converter; values starting with "-" are only ever given as --flag=value.
SAMPLES = {
    "parse_index": ["0", "7", "1000000"],
    "parse_count": ["1", "3"],
    "parse_last": ["1", "20", "500"],
    "parse_number": ["1.5", "0", "-2", "1e3"],
    "parse_pages": ["0.5", "100"],
    "parse_point": ["1,2", "-1,2.5", "0.5,-3"],
    "parse_text": ["hello", "two words", "é"],
    "str": ["", "v", "two words", "Calculator"],
    "steps": ["1", "5", "20"],
}
GLOBALS = [
    ["--json"],
    ["--no-autostart"],
    ["--socket", "/s"],
    ["--socket=/t"],
    ["--timeout", "2"],
    ["--session", "w"],
    ["--session="],
]


def values_for(param: Param) -> list[str]:
    if param.choices:
        return list(param.choices)
    return SAMPLES[getattr(param.convert, "__name__", "str")]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A well-formed command line for a random command, in a random but valid order."""
    name = draw(st.sampled_from(LEAVES))
    command = leaf(name)
    options: list[list[str]] = []
    positionals: list[str] = []
    chosen: dict[str, object] = {}  # for the command's check: only valid lines are wanted
    target = draw(st.sampled_from(["index", "point"])) if name == "click" else ""
    if name == "run":
        target = draw(st.sampled_from(["verify", ""]))
    for param in command.params:
        if param.switch:
            if draw(st.booleans()):
                options.append([param.flag])
                chosen[param.dest] = True
            continue
        value = draw(st.sampled_from(values_for(param)))
        if param.positional:
            if param.optional and draw(st.booleans()):
                continue
            positionals.append(value)
            continue
        wanted = param.required or draw(st.booleans())
        if name == "run" and param.dest in ("verify_role", "verify_label"):
            wanted = target == "verify"
        if name == "click" and param.dest in ("element_index", "x", "y"):
            wanted = (param.dest == "element_index") == (target == "index")
        if not wanted:
            continue
        chosen[param.dest] = value
        if value.startswith("-") or (value == "" and draw(st.booleans())) or draw(st.booleans()):
            options.append([f"{param.flag}={value}"])
        else:
            options.append([param.flag, value])
    assume(command.check is None or command.check(chosen) is None)
    after = draw(st.permutations([*options, *([p] for p in positionals)]))
    # Positionals keep their relative order: put them back in sequence.
    it = iter(positionals)
    after = [
        [next(it)] if len(chunk) == 1 and not chunk[0].startswith("-") else chunk for chunk in after
    ]
    before = draw(st.lists(st.sampled_from(GLOBALS), max_size=2))
    trailing = draw(st.lists(st.sampled_from(GLOBALS), max_size=2))
    words = [w for chunk in before for w in chunk] + name.split()
    return words + [w for chunk in [*after, *trailing] for w in chunk]


@settings(max_examples=400, deadline=None)
@given(command_lines())
def test_both_parsers_read_every_valid_line(argv: list[str]) -> None:
    """The fast parser accepts every valid command line, and argparse reads it the same."""
    fast = parse_fast(argv)
    assert fast is not None, argv
    assert parse_slow(argv).as_dict() == fast.as_dict()


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in LEAVES
        if leaf(n).op not in ("status", "ping", "shutdown", "doctor") and not leaf(n).own_errors
    ],
)
def test_params_are_the_request_fields(name: str) -> None:
    """Every argument fills a field of its op's request Struct, and every required field is filled."""
    command = leaf(name)
    # mode sends mode_get without its optional MODE, mode_set with it.
    variants = (
        [("mode_get", set()), ("mode_set", {"mode"})] if name == "mode" else [(command.op, None)]
    )
    for op, only in variants:
        fields = {f.encode_name: f for f in msgspec.structs.fields(STRUCTS[op])}
        params = [p for p in command.params if not p.local and (only is None or p.dest in only)]
        sent: set[str] = set()
        for param in params:
            points = param.convert.__name__ == "parse_point"
            sent |= {f"{param.dest}_x", f"{param.dest}_y"} if points else {param.dest}
        assert sent <= set(fields) - {"id"}, (op, sent - set(fields))
        always = {p.dest for p in params if p.required or p.positional}
        always |= {f"{d}_{a}" for d in always for a in "xy"}
        required = {n for n, f in fields.items() if f.required} - {"id"}
        assert required <= always, (op, required - always)


def test_request_fields_drop_unset_and_local_values() -> None:
    """Unset options and the CLI-only --screenshot never reach the request; points split in two."""
    drag = leaf("drag")
    params = {"app": "A", "state_id": "S", "from": (1.0, 2.0), "to": (3.0, 4.0)}
    assert request_fields(drag, params) == {
        "app": "A",
        "state_id": "S",
        "from_x": 1.0,
        "from_y": 2.0,
        "to_x": 3.0,
        "to_y": 4.0,
    }
    observe = leaf("observe")
    assert request_fields(observe, {"app": "A", "screenshot": "/tmp/x"}) == {"app": "A"}
    mode: Command = leaf("mode")
    assert (op_for(mode, {"mode": None}), request_fields(mode, {"mode": None})) == ("mode_get", {})
    assert (op_for(mode, {"mode": "jev"}), request_fields(mode, {"mode": "jev"})) == (
        "mode_set",
        {"mode": "jev"},
    )

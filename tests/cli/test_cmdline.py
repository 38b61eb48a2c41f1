"""The command-line grammar: the fast parser agrees with argparse, usage errors exit 2."""

from __future__ import annotations

import pytest
from deskhandctl.__main__ import main
from deskhandctl.cli.grammar import APPS_HINT, Args
from deskhandctl.cli.parser import parse, parse_fast
from deskhandctl.cli.usage import build, parse_slow
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = [
    "status",
    "ping",
    "shutdown",
    "service",
    "install",
    "uninstall",
    "--platform",
    "linux",
    "mcp",
    "config",
    "--host",
    "codex",
    "claude-desktop",
    "--scope",
    "project",
    "--write",
    "--name",
    "--json",
    "--no-autostart",
    "--socket",
    "--socket=/tmp/a.sock",
    "/tmp/b.sock",
    "--timeout",
    "--timeout=2.5",
    "3",
    "-1",
    "0",
    "abc",
    "--dry-run",
    "--",
    "-x",
    "--jso",
    "observe",
    "Calculator",
    "--screenshot",
    "click",
    "--app",
    "--state",
    "--index",
    "5",
    "--x",
    "--y",
    "--count",
    "--button=left",
    "drag",
    "--from",
    "1,2",
    "--to=3,4",
    "type",
    "mode",
    "jev",
    "turn",
    "begin",
    "apps",
    "add",
    "list",
    "remove",
    "--session",
    "work.1",
    "stop",
]
CLICK = ["click", "--app", "A", "--state", "S"]


def slow_or_exit(argv: list[str]) -> dict[str, object] | None:
    try:
        return parse_slow(argv).as_dict()
    except SystemExit:
        return None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["status"], {"command": "status"}),
        (["--json", "ping"], {"command": "ping", "json": True}),
        (["ping", "--json"], {"command": "ping", "json": True}),
        (["--socket", "/s", "status"], {"command": "status", "socket": "/s"}),
        (["status", "--socket=/s"], {"command": "status", "socket": "/s"}),
        (["--timeout", "0.5", "shutdown"], {"command": "shutdown", "timeout": 0.5}),
        (["--session", "w.1", "turn", "begin"], {"command": "turn begin", "session": "w.1"}),
        (["turn", "end", "--session="], {"command": "turn end", "session": ""}),
        (
            ["observe", "Calculator", "--screenshot", "/tmp/s.jpg", "--json"],
            {
                "command": "observe",
                "json": True,
                "params": {"app": "Calculator", "screenshot": "/tmp/s.jpg"},
            },
        ),
        (
            [*CLICK, "--index", "5"],
            {
                "command": "click",
                "params": {
                    "app": "A",
                    "state_id": "S",
                    "element_index": 5,
                    "x": None,
                    "y": None,
                    "click_count": None,
                    "mouse_button": None,
                    "handoff": None,
                    "screenshot": None,
                },
            },
        ),
        (
            [*CLICK, "--x=1.5", "--y", "2", "--count", "3", "--button", "middle"],
            {
                "command": "click",
                "params": {
                    "app": "A",
                    "state_id": "S",
                    "element_index": None,
                    "x": 1.5,
                    "y": 2.0,
                    "click_count": 3,
                    "mouse_button": "middle",
                    "handoff": None,
                    "screenshot": None,
                },
            },
        ),
        (
            ["type", "--app", "A", "hello world", "--state", "S"],
            {
                "command": "type",
                "params": {
                    "app": "A",
                    "state_id": "S",
                    "text": "hello world",
                    "handoff": None,
                    "screenshot": None,
                },
            },
        ),
        (
            ["drag", "--app", "A", "--state", "S", "--from", "1,2", "--to=3.5,4"],
            {
                "command": "drag",
                "params": {
                    "app": "A",
                    "state_id": "S",
                    "from": (1.0, 2.0),
                    "to": (3.5, 4.0),
                    "handoff": None,
                    "screenshot": None,
                },
            },
        ),
        (
            [
                "select-text",
                "--app",
                "A",
                "--state",
                "S",
                "--index",
                "0",
                "t",
                "--selection",
                "text",
            ],
            {
                "command": "select-text",
                "params": {
                    "app": "A",
                    "state_id": "S",
                    "element_index": 0,
                    "text": "t",
                    "prefix": None,
                    "suffix": None,
                    "selection": "text",
                    "handoff": None,
                    "screenshot": None,
                },
            },
        ),
        (["mode"], {"command": "mode", "params": {"mode": None}}),
        (
            ["mode", "--json", "native"],
            {"command": "mode", "json": True, "params": {"mode": "native"}},
        ),
        (
            ["apps", "--json", "add", "Calendar"],
            {"command": "apps add", "json": True, "params": {"app": "Calendar"}},
        ),
        (["apps", "list"], {"command": "apps list"}),
        (["stop", "--no-autostart"], {"command": "stop", "no_autostart": True}),
        (["status", "--no-autostart"], {"command": "status", "no_autostart": True}),
        (
            ["service", "install", "--dry-run"],
            {"command": "service install", "params": {"dry_run": True, "platform": None}},
        ),
        (
            ["--json", "service", "uninstall", "--platform=macos"],
            {
                "command": "service uninstall",
                "json": True,
                "params": {"dry_run": None, "platform": "macos"},
            },
        ),
        (["mcp"], {"command": "mcp"}),
        (
            ["--socket", "/s", "mcp", "--no-autostart"],
            {"command": "mcp", "socket": "/s", "no_autostart": True},
        ),
        (
            ["mcp", "config", "--host", "codex", "--write", "--name=desk-1", "--approve-tools"],
            {
                "command": "mcp config",
                "params": {
                    "host": "codex",
                    "scope": None,
                    "name": "desk-1",
                    "write": True,
                    "platform": None,
                    "approve_tools": True,
                },
            },
        ),
    ],
)
def test_fast_parser_reads_common_command_lines(
    argv: list[str], expected: dict[str, object]
) -> None:
    """Well-formed command lines parse without argparse, and argparse agrees with the result."""
    defaults: dict[str, object] = {
        "json": False,
        "socket": None,
        "timeout": None,
        "no_autostart": False,
        "session": None,
        "params": {},
    }
    fast = parse_fast(argv)
    assert fast is not None
    assert fast.as_dict() == {**defaults, **expected}
    assert slow_or_exit(argv) == fast.as_dict()


@settings(max_examples=300)
@given(st.lists(st.sampled_from(WORDS), max_size=8))
def test_fast_parser_never_disagrees_with_argparse(argv: list[str]) -> None:
    """Wherever the fast parser answers, argparse accepts the same line with the same meaning."""
    fast = parse_fast(argv)
    if fast is not None:
        assert slow_or_exit(argv) == fast.as_dict()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["stat"],
        ["status", "extra"],
        ["--timeout", "0", "status"],
        ["--timeout", "-1", "status"],
        ["--timeout", "soon", "status"],
        ["--socket"],
        ["--jso", "status"],
        ["status", "--version"],
        ["--json=yes", "status"],
        ["--session", "has space", "observe", "A"],
        ["observe"],
        ["observe", "A", "B"],
        ["--app", "A", "observe", "B"],
        CLICK,
        [*CLICK, "--index", "1", "--x", "1", "--y", "2"],
        [*CLICK, "--x", "1"],
        [*CLICK, "--index", "-1"],
        [*CLICK, "--index", "1", "--count", "4"],
        [*CLICK, "--index", "1", "--button", "back"],
        ["click", "--app", "A", "--index", "1"],
        ["type", "--app", "A", "--state", "S", ""],
        ["type", "--app", "A", "--state", "S"],
        ["scroll", "--app", "A", "--state", "S", "--index", "1", "--direction", "sideways"],
        [
            "scroll",
            "--app",
            "A",
            "--state",
            "S",
            "--index",
            "1",
            "--direction",
            "up",
            "--pages",
            "0",
        ],
        ["drag", "--app", "A", "--state", "S", "--from", "1", "--to", "2,3"],
        ["mode", "turbo"],
        ["turn"],
        ["turn", "pause"],
        ["launch"],
        ["service"],
        ["service", "reinstall"],
        ["service", "install", "--platform", "windows"],
        ["mcp", "serve"],
        ["mcp", "--bogus"],
        ["mcp", "config"],
        ["mcp", "config", "--host", "zed"],
        ["mcp", "config", "--host", "claude-desktop", "--scope", "project"],
        ["mcp", "config", "--host", "codex", "--name", "x" * 65],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad command lines exit 2 with argparse's usage message on stderr."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deskhandctl")
    assert "error:" in err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (CLICK, "say what to click: --index N, or --x X --y Y"),
        (
            [*CLICK, "--index", "1", "--x", "1", "--y", "2"],
            "give either --index or --x and --y, not both",
        ),
        ([*CLICK, "--y", "1"], "--x and --y go together"),
    ],
)
def test_click_target_errors_name_the_fix(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """click needs exactly one target; the usage error says which options to give."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deskhandctl click")
    assert f"error: {problem}" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["apps", "remove", "Calculator"],
        ["apps", "replace", "Calculator"],
        ["apps", "add", "Calculator", "TextEdit"],
        ["apps", "add"],
        ["apps", "list", "Calculator"],
        ["apps"],
    ],
)
def test_apps_misuse_explains_what_apps_never_does(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """apps only lists or adds one app; other uses exit 2 and say so (and where the file is)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deskhandctl apps")
    assert APPS_HINT in err
    assert "never removes or replaces apps" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the package version and exits 0, through either parser."""
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "deskhandctl 0.1.0\n"
    assert main(["--json", "--version"]) == 0
    assert capsys.readouterr().out == "deskhandctl 0.1.0\n"


def test_help_lists_commands_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    """--help exits 0 and names every command and the exit codes."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for word in ("status", "ping", "shutdown", "service", "--no-autostart", "69", "77"):
        assert word in out
    for word in (
        "observe",
        "click",
        "secondary-action",
        "list-apps",
        "apps",
        "turn",
        "stop",
        "unlock",
        "--session",
    ):
        assert word in out


@pytest.mark.parametrize(
    "command",
    [
        "observe",
        "click",
        "select-text",
        "drag",
        "apps add",
        "turn end",
        "mode",
        "service",
        "service install",
        "service uninstall",
        "mcp",
        "mcp config",
    ],
)
def test_command_help_shows_its_arguments(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help lists its own arguments and the global options."""
    assert main([*command.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: deskhandctl {command}")
    assert "--json" in out and "--session" in out


@pytest.mark.parametrize(
    ("argv", "built"),
    [
        (["--help"], set()),
        (["stat"], set()),
        (["click", "--app", "A", "--help"], {"click"}),
        (["apps", "remove", "X"], {"apps"}),
        (["apps", "add", "--help"], {"apps", "apps add"}),
        (["observe", "status", "--"], {"observe", "status"}),
    ],
)
def test_argparse_is_built_for_the_named_command_only(argv: list[str], built: set[str]) -> None:
    """Help and usage errors build argparse only for commands the line names; the rest are
    bare entries, listed in the top-level help and in the choices of a misspelt command."""
    parser, by_name = build(argv)
    assert set(by_name) == built
    usage = parser.format_help()
    for name in ("status", "observe", "grants", "service"):
        assert name in usage


def test_parse_raises_system_exit_for_help() -> None:
    """parse() itself exits like argparse does; main() turns that into a return code."""
    with pytest.raises(SystemExit) as info:
        parse(["status", "--help"])
    assert info.value.code == 0


def test_mcp_help_says_what_it_serves_and_how(capsys: pytest.CaptureFixture[str]) -> None:
    """``mcp --help`` is built from the table: it names the config action, says each host
    connection is a daemon session of its own, that questions go to the host as forms, and
    when the daemon is started."""
    assert main(["mcp", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: deskhandctl mcp")
    assert "[ACTION] ..." in out and "config" in out
    assert "each connection it makes is a daemon session of its own" in out
    assert "as a form" in out and "refused otherwise" in out
    assert "--no-autostart" in out and "DESKHAND_NO_AUTOSTART=1" in out
    assert "docs/mcp.md" in out


@pytest.mark.parametrize(
    ("argv", "handler", "expected"),
    [
        (
            ["service", "install", "--dry-run", "--json"],
            "deskhandctl.setup.service.install",
            {"dry_run": True, "platform": None},
        ),
        (
            ["service", "uninstall", "--platform", "linux"],
            "deskhandctl.setup.service.uninstall",
            {"dry_run": None, "platform": "linux"},
        ),
        (
            ["mcp", "config", "--host", "vscode", "--scope", "project"],
            "deskhandctl.setup.mcpconfig.configure",
            {
                "host": "vscode",
                "scope": "project",
                "name": None,
                "write": None,
                "platform": None,
                "approve_tools": None,
            },
        ),
    ],
)
def test_service_and_mcp_config_handlers_get_the_parsed_arguments(
    argv: list[str], handler: str, expected: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """service and mcp config are entries of the one table: their handler gets Args, and what
    it returns is the exit code."""
    calls: list[dict[str, object]] = []

    def fake(args: Args) -> int:
        calls.append(args.params)
        return 5

    monkeypatch.setattr(handler, fake)
    assert main(argv) == 5
    assert calls == [expected]


def test_mcp_alone_runs_its_handler_with_the_global_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``mcp`` without an action serves: its handler gets --socket and --no-autostart, given
    before or after the command."""
    calls: list[tuple[str, str | None, bool]] = []

    def fake(args: Args) -> int:
        calls.append((args.command, args.socket, args.no_autostart))
        return 0

    monkeypatch.setattr("deskhandctl.facade.server.run", fake)
    assert main(["--socket", "/s", "mcp", "--no-autostart"]) == 0
    assert main(["mcp", "--socket=/t"]) == 0
    assert calls == [("mcp", "/s", True), ("mcp", "/t", False)]

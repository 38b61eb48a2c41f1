"""The command-line grammar: the fast parser agrees with argparse, usage errors exit 2."""

from __future__ import annotations

import pytest
from deskhandctl.__main__ import main
from deskhandctl.cmdline import DEFAULT_TIMEOUT_S, parse, parse_fast, parse_slow
from hypothesis import given
from hypothesis import strategies as st

WORDS = [
    "status",
    "ping",
    "shutdown",
    "service",
    "install",
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
]


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
        (["status", "--no-autostart"], {"command": "status", "no_autostart": True}),
        (
            ["service", "install", "--dry-run"],
            {"command": "service", "rest": ["install", "--dry-run"]},
        ),
        (["--json", "service", "--help"], {"command": "service", "json": True, "rest": ["--help"]}),
    ],
)
def test_fast_parser_reads_common_command_lines(
    argv: list[str], expected: dict[str, object]
) -> None:
    """Well-formed command lines parse without argparse, and argparse agrees with the result."""
    defaults: dict[str, object] = {
        "json": False,
        "socket": None,
        "timeout": DEFAULT_TIMEOUT_S,
        "no_autostart": False,
        "rest": [],
    }
    fast = parse_fast(argv)
    assert fast is not None
    assert fast.as_dict() == {**defaults, **expected}
    assert slow_or_exit(argv) == fast.as_dict()


@given(st.lists(st.sampled_from(WORDS), max_size=6))
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
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad command lines exit 2 with argparse's usage message on stderr."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deskhandctl")
    assert "error:" in err


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


def test_parse_raises_system_exit_for_help() -> None:
    """parse() itself exits like argparse does; main() turns that into a return code."""
    with pytest.raises(SystemExit) as info:
        parse(["status", "--help"])
    assert info.value.code == 0


def test_service_arguments_are_passed_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything after 'service' goes, untouched, to deskhandctl.service.main."""
    calls: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append(argv)
        return 5

    monkeypatch.setattr("deskhandctl.service.main", fake_main)
    assert main(["service", "install", "--dry-run", "--json"]) == 5
    assert calls == [["install", "--dry-run", "--json"]]

"""``python -m deskhand_d.programs.sim [mcp | turn-ended [payload]] [--scenario PATH]``.

What this owns: the command line, and composing the program: the server core
(:mod:`deskhand_d.programs.core`) with the simulator's tools (:mod:`.server`). ``mcp``
(the default, as Sky is started with ``mcp``) serves MCP on stdin/stdout; ``turn-ended``
accepts Sky's hook invocation and exits 0 (a running simulator ends its turn on SIGUSR1
instead). The scenario comes from ``--scenario`` or the ``DESKHAND_SIM_SCENARIO`` environment
variable; a bad one is reported on stderr with exit status 2, before anything is written to
stdout.
"""

from __future__ import annotations

import argparse
import os
import sys

import trio

from ..core.server import StdioServer
from .record import Recorder
from .scenario import ENV_RECORD, ScenarioError, load
from .server import SimTools


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m deskhand_d.programs.sim",
        description="A simulated Mac desktop that serves Sky's computer-use tools over MCP stdio.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        default="mcp",
        choices=("mcp", "turn-ended"),
        help="mcp (default) serves MCP on stdio; turn-ended is accepted and does nothing",
    )
    parser.add_argument("payload", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", metavar="PATH", help="JSON file with scenario knobs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "turn-ended":
        return 0
    try:
        scenario = load(args.scenario)
    except ScenarioError as exc:
        print(f"deskhand sim: {exc}", file=sys.stderr)
        return 2
    try:
        recorder = Recorder(os.environ.get(ENV_RECORD))
    except OSError as exc:
        print(f"deskhand sim: cannot open the record file: {exc.strerror}", file=sys.stderr)
        return 2
    server = StdioServer(record=recorder)
    try:
        trio.run(server.serve, SimTools(scenario, recorder, server))
    except KeyboardInterrupt:
        return 130
    finally:
        recorder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m deskhand_d.programs.atspi [mcp] [--max-nodes N]``: the Linux desktop over MCP.

What this owns: the command line, and composing the program: the server core
(:mod:`deskhand_d.programs.core`) with this backend's tools (:mod:`.server`). ``mcp``
(the default, as Sky is started with ``mcp``) serves MCP on stdin/stdout; ``turn-ended`` is
accepted and does nothing, like the simulator. The node cap comes from ``--max-nodes`` or
``DESKHAND_ATSPI_MAX_NODES`` (default 5000). Nothing is written to stderr in normal operation;
a missing desktop is reported through tool results, never by exiting.
"""

from __future__ import annotations

import argparse
import os
import sys

import trio

from ..core.server import StdioServer
from .engine import Backend
from .render import DEFAULT_MAX_NODES
from .server import AtspiTools

ENV_MAX_NODES = "DESKHAND_ATSPI_MAX_NODES"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m deskhand_d.programs.atspi",
        description="Serve Sky's computer-use tools over MCP stdio for this Linux desktop "
        "(AT-SPI for the accessibility tree; X11, or on Wayland the compositor, for "
        "screenshots and input).",
    )
    parser.add_argument("command", nargs="?", default="mcp", choices=("mcp", "turn-ended"))
    parser.add_argument("payload", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument(
        "--max-nodes",
        type=_positive,
        metavar="N",
        help=f"elements listed per window before the tree is cut (default {DEFAULT_MAX_NODES})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "turn-ended":
        return 0
    max_nodes = args.max_nodes
    if max_nodes is None:
        try:
            max_nodes = _positive(os.environ.get(ENV_MAX_NODES, "") or str(DEFAULT_MAX_NODES))
        except ValueError:
            print(f"deskhand atspi: {ENV_MAX_NODES} must be a positive integer", file=sys.stderr)
            return 2
    try:
        trio.run(StdioServer().serve, AtspiTools(Backend(max_nodes=max_nodes)))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

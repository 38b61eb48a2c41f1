"""The commands that run in the CLI itself, as data: ``ax``, ``trace``, ``audit``, ``eval`` and
``demo``.

They never send a request of their own to the daemon (``demo`` starts a private one), so every
``dest`` here is ``local``. :mod:`deskhandctl.grammar` puts them into its command table; the
same start-up rule holds: only the cheapest standard-library imports.
"""

from __future__ import annotations

from deskhandctl.argspec import Command, Param
from deskhandctl.convert import parse_last

LOCAL_COMMANDS: tuple[Command, ...] = (
    Command(
        "ax",
        "work with accessibility-tree text offline",
        subcommands=(
            Command(
                "parse",
                "parse a tree from a file and show its elements, focus and Jev's candidates",
                "",
                (
                    Param("FILE", "file", "the tree text ('-' for stdin)", local=True),
                    Param(
                        "--goal",
                        "goal",
                        "rank candidates for this goal",
                        metavar="GOAL",
                        local=True,
                    ),
                ),
                offline=True,
            ),
        ),
    ),
    Command(
        "trace",
        "read Jev run traces offline",
        subcommands=(
            Command("list", "list the trace files, newest first", "", offline=True),
            Command(
                "show",
                "show a trace as a per-step timeline",
                "",
                (Param("PATH", "path", "the trace file", local=True),),
                offline=True,
            ),
            Command(
                "analyze",
                "find the first step where the run went wrong, and whether it is complete",
                "",
                (Param("PATH", "path", "the trace file", local=True),),
                offline=True,
            ),
        ),
    ),
    Command(
        "audit",
        "show the latest dispatches from the audit log, each with what reached the desktop",
        "",
        (
            Param(
                "--last",
                "last",
                "how many dispatches to show (default 20)",
                convert=parse_last,
                metavar="N",
                local=True,
            ),
        ),
        offline=True,
    ),
    Command(
        "eval",
        "run the built-in Jev cases against the real, paid API (needs --live)",
        "",
        (
            Param(
                "--live",
                "live",
                "really send the cases to the Jev API",
                switch=True,
                local=True,
            ),
        ),
        offline=True,
    ),
    Command(
        "demo",
        "do 6 + 7 = in a real Calculator (a private desktop if none) and save a screenshot",
        "",
        (
            Param(
                "--screenshot",
                "screenshot",
                "PNG to write (default ./deskhand-demo.png)",
                local=True,
            ),
            Param(
                "--sim",
                "sim",
                "use the simulated desktop even where a real one could be had",
                switch=True,
                local=True,
            ),
        ),
        offline=True,
    ),
)

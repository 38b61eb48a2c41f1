"""The commands that run in the CLI itself, without the daemon: ``ax parse`` and ``eval``.

``ax parse FILE`` shows what Jev would be shown for a tree: its elements, focus and ranked
candidates (pure parsing; nothing is sent anywhere). ``eval --live`` sends the built-in cases to
the real Jev API, which costs money, so it refuses to run without ``--live``; it never runs in CI.
These import the daemon's modules (msgspec, and trio and httpx for ``eval``), which is fine
here: they are off every other command's start-up path.
"""

from __future__ import annotations

import os
import sys

from deskhandctl.exitcodes import DAEMON_ERROR, OK, USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args


def run_offline(args: Args) -> int:
    if args.command == "ax parse":
        return _ax_parse(args)
    return _eval(args)


def _ax_parse(args: Args) -> int:
    from deskhand_d.ax import AxParseError
    from deskhand_d.ax.report import report

    path = str(args.params.get("file") or "-")
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"deskhandctl: cannot read {path}: {exc}", file=sys.stderr)
        return USAGE
    goal = str(args.params.get("goal") or "")
    try:
        print(report(text, goal, as_json=args.json))
    except AxParseError as exc:
        print(f"deskhandctl: {exc}", file=sys.stderr)
        return DAEMON_ERROR
    return OK


def _eval(args: Args) -> int:
    if not args.params.get("live"):
        print(
            "deskhandctl: eval sends its cases to the real Jev API, which is billed to your "
            "TypeSafe key; add --live to do that (it is never run in CI)",
            file=sys.stderr,
        )
        return USAGE
    import trio

    from deskhand_d.review.evaluation import run_cases

    passed, lines = trio.run(run_cases, dict(os.environ))
    for line in lines:
        print(line)
    return OK if passed else DAEMON_ERROR

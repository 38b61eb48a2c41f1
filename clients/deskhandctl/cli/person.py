"""Steps only the person takes: ``unlock``, ``apps add``, ``grants restore`` and ``questions``.

What this owns: the rule that these run only from the person's terminal, and the confirmation
the first three ask there (the commands marked ``confirm`` in :mod:`deskhandctl.cli.grammar`).
Each widens what agents may do (the emergency stop released, an app allowed, a saved grant
back, answers given for other clients), so an agent's tool call must not take it for the
person. Without a terminal on stdin and stderr (a script, a pipe, an agent's shell tool) the
command refuses before it connects: exit 66 (:class:`~deskhandctl.exitcodes.NoTerminal`), and
the message says to run it in a terminal. On a terminal, whatever was typed and not yet read
is thrown away first (:func:`~deskhandctl.cli.events.discard_typeahead`, as before every
question), the step is shown, and only ``y`` or ``yes`` typed after that goes ahead; anything
else, an empty line or end of input sends nothing (exit 1,
:class:`~deskhandctl.exitcodes.Declined`). ``questions`` asks the person about each question
instead of once (:mod:`deskhandctl.cli.console`).

This keeps the surfaces an agent is handed honest; it is no wall against a program running as
the person, which could open a pseudo-terminal and type (``docs/consent.md``, "What an agent
may not do for the person"). No option or environment variable skips it: an agent could set
either.
"""

from __future__ import annotations

import sys

from deskhandctl.cli import events, render
from deskhandctl.exitcodes import Declined, NoTerminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args

_YES = frozenset({"y", "yes"})


def require_terminal(command: str, extra: str = "") -> None:
    """Refuse ``command`` (``"unlock"``) unless stdin and stderr are both terminals; ``extra``
    is added to the refusal (what may be done without one)."""
    if events.terminal_attached():
        return
    raise NoTerminal(
        f"{command} is a step only you take, so it runs only from your own terminal (stdin and "
        "stderr must both be terminals, and here they are not); nothing was sent. If an agent "
        f"asked for it, decide yourself and run `deskhandctl {command}` in a terminal" + extra
    )


def step(args: Args) -> str:
    """What the command is about to do, in the person's words (names shown escaped: an agent
    may have suggested them)."""
    app = render.printable(str(args.params.get("app", "")), bidi=True)
    if args.command == "apps add":
        return (
            f"Add '{app}' to Deskhand's allowlist? Any agent may then ask to use it (Deskhand "
            "still asks for your consent the first time)."
        )
    if args.command == "grants restore":
        return (
            f"Give back your revoked saved grant for '{app}'? Agents may then use that exact "
            "program again without asking you."
        )
    return "Release Deskhand's emergency stop? Agents may then act on the desktop again."


def confirm(args: Args) -> None:
    """Go ahead only once the person has said yes on their terminal: raises NoTerminal without
    one, Declined for anything but yes. Ctrl-C leaves through ``main`` (exit 130)."""
    require_terminal(args.command)
    stdin, stderr = sys.stdin, sys.stderr
    events.discard_typeahead(stdin)  # a 'y' typed before the question appeared never counts
    stderr.write(f"deskhandctl: {step(args)}\nGo ahead? [y/N] ")
    stderr.flush()
    line = stdin.readline()
    if not line.endswith("\n"):
        stderr.write("\n")  # end of input: keep what follows on a line of its own
    if line.strip().lower() not in _YES:
        raise Declined("not confirmed, so nothing was sent")

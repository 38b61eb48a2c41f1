"""The command-line grammar of ``deskhandctl`` as data: global options, commands, their arguments.

:mod:`deskhandctl.cmdline` builds both of its parsers from these tables, and
:mod:`deskhandctl.commands` builds each request from them: a :class:`Param`'s ``dest`` is the
request field it fills (``--index`` fills ``element_index``), so the wire names are written
once, here. A test checks every ``dest`` against ``deskhand_d.protocol.requests``.

Importing this module builds small tuples and dicts only; it is on every command's start-up
path, so it must stay free of imports beyond the standard library's cheapest.
"""

from __future__ import annotations

from deskhandctl import convert as c
from deskhandctl.argshapes import (
    BUTTONS,
    SELECTIONS,
    SHOT,
    WAYS,
    click_target,
    index_param,
    point_param,
    steps,
    target,
    verify_pair,
)
from deskhandctl.argspec import DEFAULT_TIMEOUT_S, DESKTOP_TIMEOUT_S, Command, Option, Param
from deskhandctl.hints import APPS_HINT, GRANTS_HINT, RUN_HINT
from deskhandctl.localgrammar import LOCAL_COMMANDS

__all__ = [
    "APPS_HINT",
    "COMMANDS",
    "DEFAULT_TIMEOUT_S",
    "DESKTOP_TIMEOUT_S",
    "GRANTS_HINT",
    "OPTIONS",
    "OPTION_BY_FLAG",
    "PASSTHROUGH",
    "PROG",
    "RUN_HINT",
    "Command",
    "Option",
    "Param",
    "leaf",
]

PROG = "deskhandctl"
PASSTHROUGH = "service"


# ----- the tables -----------------------------------------------------------------------------

OPTIONS = (
    Option("--json", "print the daemon's result as one JSON object on stdout"),
    Option(
        "--socket",
        "the daemon's socket (default: $DESKHAND_SOCKET, else the per-user default)",
        convert=str,
        metavar="PATH",
    ),
    Option(
        "--timeout",
        f"give up on any single answer after this long (default {DEFAULT_TIMEOUT_S:g}; "
        f"{DESKTOP_TIMEOUT_S:g} for doctor and the commands that use the desktop)",
        convert=c.parse_timeout,
        metavar="SECONDS",
    ),
    Option(
        "--no-autostart",
        "do not start the daemon when it is not running (also DESKHAND_NO_AUTOSTART=1)",
    ),
    Option(
        "--session",
        "the daemon session to use (default: $DESKHAND_SESSION, else cli-<uid>; '' for a "
        "throwaway one)",
        convert=c.parse_session,
        metavar="NAME",
    ),
)
OPTION_BY_FLAG = {option.flag: option for option in OPTIONS}


COMMANDS: dict[str, Command] = {
    cmd.name: cmd
    for cmd in (
        Command("status", "show the daemon's version, uptime, clients and request statistics"),
        Command("ping", "check that the daemon answers, and how fast"),
        Command("shutdown", "ask the daemon to stop (never starts one)", autostart=False),
        Command(
            "doctor",
            "check the computer-use backend without acting on the desktop: its handshake, "
            "and for Sky one read-only list_apps",
            params=(
                Param(
                    "--backend",
                    "backend",
                    "check this backend instead of the daemon's own (a throwaway process)",
                    choices=("auto", "sky", "atspi", "sim", "command"),
                ),
            ),
            timeout=DESKTOP_TIMEOUT_S,
        ),
        Command(
            "observe",
            "show an app's accessibility tree and a fresh state id for one action",
            "get_app_state",
            (
                Param("APP", "app", "the app: name, bundle id or path"),
                Param("--screenshot", "screenshot", SHOT, metavar="FILE", local=True),
            ),
            desktop=True,
        ),
        Command(
            "click",
            "click an element (--index) or a point in the screenshot (--x, --y)",
            "click",
            target(
                Param(
                    "--index", "element_index", "the element", convert=c.parse_index, metavar="N"
                ),
                Param("--x", "x", "screenshot x coordinate", convert=c.parse_number, metavar="X"),
                Param("--y", "y", "screenshot y coordinate", convert=c.parse_number, metavar="Y"),
                Param("--count", "click_count", "1, 2 or 3", convert=c.parse_count, metavar="N"),
                Param("--button", "mouse_button", "mouse button", choices=BUTTONS),
            ),
            check=click_target,
            desktop=True,
        ),
        Command(
            "type",
            "type text into the focused element",
            "type_text",
            target(Param("TEXT", "text", "the text to type", convert=c.parse_text)),
            desktop=True,
        ),
        Command(
            "press",
            "press a key or key combination (e.g. Return, super+a)",
            "press_key",
            target(Param("KEY", "key", "the key", convert=c.parse_text)),
            desktop=True,
        ),
        Command(
            "scroll",
            "scroll an element",
            "scroll",
            target(
                index_param("the element to scroll"),
                Param("--direction", "direction", "which way", choices=WAYS, required=True),
                Param(
                    "--pages", "pages", "how far (default 1)", convert=c.parse_pages, metavar="P"
                ),
            ),
            desktop=True,
        ),
        Command(
            "set-value",
            "set an element's value",
            "set_value",
            target(index_param("the element"), Param("VALUE", "value", "the new value")),
            desktop=True,
        ),
        Command(
            "select-text",
            "select text in an element, or put the cursor next to it",
            "select_text",
            target(
                index_param("the element"),
                Param("TEXT", "text", "the text to select"),
                Param("--prefix", "prefix", "text just before it", metavar="P"),
                Param("--suffix", "suffix", "text just after it", metavar="S"),
                Param("--selection", "selection", "what to select", choices=SELECTIONS),
            ),
            desktop=True,
        ),
        Command(
            "drag",
            "drag from one screenshot point to another",
            "drag",
            target(
                point_param("--from", "from", "start point"),
                point_param("--to", "to", "end point"),
            ),
            desktop=True,
        ),
        Command(
            "secondary-action",
            "perform one of an element's secondary actions (as the observation lists them)",
            "perform_secondary_action",
            target(
                index_param("the element"),
                Param("ACTION", "action", "its name", convert=c.parse_text),
            ),
            desktop=True,
        ),
        Command("list-apps", "list the apps the backend can see", "list_apps", desktop=True),
        Command(
            "launch",
            "launch an app",
            "launch_app",
            (Param("APP", "app", "the app: name, bundle id or path"),),
            desktop=True,
        ),
        Command(
            "mode",
            "show the session's mode, or set it",
            "mode_get",
            (Param("MODE", "mode", "the mode to set", choices=("native", "jev"), optional=True),),
            session=True,
        ),
        Command(
            "turn",
            "begin or end a turn (ending one retires its state ids)",
            subcommands=(
                Command("begin", "start a new turn", "turn_begin", session=True),
                Command("end", "end the current turn", "turn_end", session=True),
            ),
        ),
        Command(
            "session",
            "manage this CLI's daemon session",
            subcommands=(
                Command(
                    "close",
                    "end the session now (its state ids go, its queued work is cancelled)",
                    "session_close",
                    session=True,
                ),
            ),
        ),
        Command(
            "apps",
            "show the app allowlist, or add one app to it",
            subcommands=(
                Command("list", "show the allowlist and its file", "apps_list", hint=APPS_HINT),
                Command(
                    "add",
                    "add one app to the allowlist (only at the person's request)",
                    "apps_add",
                    (Param("NAME", "app", "the app's name"),),
                    hint=APPS_HINT,
                ),
            ),
            hint=APPS_HINT,
        ),
        Command(
            "run",
            "run a Jev task on one app (jev mode; executes unless --dry-run)",
            "run",
            (
                Param("--app", "app", "the app", metavar="APP", required=True),
                Param("GOAL", "goal", "what to achieve, in a sentence", convert=c.parse_text),
                Param(
                    "--dry-run",
                    "dry_run",
                    "decide one step, show it, dispatch nothing",
                    switch=True,
                ),
                Param(
                    "--max-steps",
                    "max_steps",
                    "at most this many steps (1-20, default 5)",
                    convert=steps,
                    metavar="N",
                ),
                Param(
                    "--verify-role",
                    "verify_role",
                    "done when an element has this role...",
                    metavar="ROLE",
                    local=True,
                ),
                Param(
                    "--verify-label",
                    "verify_label",
                    "...and exactly this label",
                    metavar="LABEL",
                    local=True,
                ),
                Param("--plan", "plan", "the plan Jev should follow, from you", metavar="PLAN"),
                Param("--text", "text", "text Jev may type or set", metavar="TEXT"),
                Param("--key", "key", "a key Jev may press", metavar="KEY"),
                Param(
                    "--full-trace",
                    "full_trace",
                    "record everything about this run (asks you first)",
                    switch=True,
                ),
                Param(
                    "--direction",
                    "direction",
                    "a direction Jev may scroll",
                    choices=WAYS,
                    metavar="DIR",
                ),
            ),
            desktop=True,
            timeout=240.0,
            check=verify_pair,
            hint=RUN_HINT,
        ),
        *LOCAL_COMMANDS,
        Command(
            "grants",
            "show, revoke or restore the apps you have always allowed",
            subcommands=(
                Command(
                    "list", "show saved grants and their file", "grants_list", hint=GRANTS_HINT
                ),
                Command(
                    "revoke",
                    "withdraw a saved grant (cancels work in progress, restarts the backend)",
                    "grants_revoke",
                    (Param("APP", "app", "the app's name or executable path, as listed"),),
                    hint=GRANTS_HINT,
                ),
                Command(
                    "restore",
                    "give back a revoked saved grant",
                    "grants_restore",
                    (Param("APP", "app", "the app's name or executable path, as listed"),),
                    hint=GRANTS_HINT,
                ),
            ),
            hint=GRANTS_HINT,
        ),
        Command(
            "stop",
            "emergency stop: cancel everything and lock the daemon (never starts one)",
            "stop",
            autostart=False,
        ),
        Command("unlock", "release the emergency stop", "unlock"),
        Command(
            PASSTHROUGH,
            "install or uninstall the systemd/launchd user service (see 'service --help')",
        ),
    )
}


def leaf(name: str) -> Command:
    """The command ``name`` names: ``"status"``, or ``"apps add"`` for a subcommand."""
    head, _, sub = name.partition(" ")
    command = COMMANDS[head]
    return command.subcommands[sub] if sub else command

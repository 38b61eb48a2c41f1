"""How Sky is started: the runtime it needs, the ``codex sandbox`` recipes that start it, which
recipe goes first, and what counts as a recipe being refused.

Sky's client (``SkyComputerUseClient mcp``) serves tool calls only to an OpenAI-signed parent,
so a signed ``codex`` runs it as a jump host (``../shared/specs/sky-protocol.md`` §1.4). Three
command lines are known to work somewhere; none is known to work everywhere:

* ``permissions_profile`` (first): ``codex sandbox --permissions-profile :danger-full-access
  --allow-unix-socket <IPC dir> -- <client> mcp``, from the working directory below. The
  predecessor's form (it spelt the option ``-P``), the one its users ran. Without a profile,
  ``codex sandbox`` forces a read-only sandbox (codex's source, not a run), whose seatbelt
  kills the client.
* ``config_override``: ``codex sandbox --config sandbox_mode="danger-full-access" -- <client>
  mcp``.
* ``sandbox_state``: ``codex sandbox --sandbox-state-json '{...}' -- <client> mcp``.

How each is spelt follows what the installed codex says it accepts
(:class:`~deskhand_d.backends.codexhelp.Shape`: ``sandbox`` or ``sandbox macos``, each option's
long name where it has one, the unix-socket allowance only where offered), and a recipe whose
option this codex lacks is not tried unless it is pinned. ``--`` always stands before the
client's command line.

The Computer Use service's folder in its group container (``~/Library/Group Containers/
2DC432GLL2.com.openai.sky.CUAService/IPC``) is only ever a string on codex's command line:
since macOS 15 looking into another developer's group container can raise a privacy prompt
naming Python (and on Python 3.11 and 3.12 ``Path.is_dir`` then raises), so nothing here
stats, lists or opens anything in it. Whether the client can reach its service is Sky's to
say, in its answer to the handshake or to ``list_apps``.

A later recipe is tried only when the earlier one was *recognisably refused* before the
handshake finished (:func:`refusal`): codex rejected the command line, or its sandbox aborted
the client (exit 134). Anything else (a SIGKILL, a hang, a handshake that works) is not a
question of the recipe and is reported as it is. The recipe that worked is remembered per
``codex`` (:class:`RecipeMemory`, a small file in the state directory) and tried first next
time; ``backend.sky_recipe`` pins one, and then nothing else is tried.

Pure apart from looking at the file system (never the group container) and the memory file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from deskhand_d.backends.codexhelp import ASSUMED, Shape

RECIPES: Final = ("permissions_profile", "config_override", "sandbox_state")
SKY_TEAM_CONTAINER: Final = "2DC432GLL2.com.openai.sky.CUAService"
MEMORY_NAME: Final = "sky-recipe.json"

SERVICE_APP: Final = "Codex Computer Use.app"
CLIENT_IN_APP: Final = (
    f"{SERVICE_APP}/Contents/SharedSupport/SkyComputerUseClient.app/"
    "Contents/MacOS/SkyComputerUseClient"
)

# What codex prints when it does not understand its command line (clap's wording, and codex's
# own for an unknown profile). Matched with the exit status, never alone.
_USAGE_MARKERS: Final = (
    "unexpected argument",
    "unrecognized option",
    "unrecognized argument",
    "invalid value",
    "unknown permission",
    "Usage: codex",
)
SANDBOX_ABORT_STATUSES: Final = (134, -6)  # 128 + SIGABRT as a parent reports it, or the signal


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or "~").expanduser() / ".codex")


def ipc_dir(env: Mapping[str, str]) -> Path:
    """The Computer Use service's socket folder, which the sandbox must let the client reach.

    A path to hand codex as text, never to look at (see the module notes)."""
    home = Path(env.get("HOME") or "~").expanduser()
    return home / "Library" / "Group Containers" / SKY_TEAM_CONTAINER / "IPC"


def working_dir(cwd: str, env: Mapping[str, str], client: Path | None = None) -> Path:
    """``backend.cwd``; else ``$CODEX_HOME/computer-use``; else, when that does not exist and
    the client was found inside a ``Codex Computer Use.app`` (in ChatGPT.app, Codex.app or the
    plugin cache), the folder holding that app, which is what ``$CODEX_HOME/computer-use`` is
    to the canonical install. Never the daemon's own cwd, which is ``/`` under launchd."""
    if cwd:
        return Path(cwd)
    canonical = codex_home(env) / "computer-use"
    if canonical.is_dir() or client is None:
        return canonical
    parts = client.parts
    if SERVICE_APP in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(SERVICE_APP)
        return Path(*parts[:at])
    return canonical


@dataclass(frozen=True, slots=True)
class Missing:
    """One part of Sky's runtime that is not there: what, where it was looked for, the fix."""

    what: str
    paths: tuple[str, ...]
    fix: str

    def to_data(self) -> dict[str, object]:
        return {"what": self.what, "paths": list(self.paths), "fix": self.fix}

    def describe(self) -> str:
        where = " or ".join(self.paths)
        return f"{self.what} (looked for {where})"


@dataclass(frozen=True, slots=True)
class Runtime:
    client: Path
    codex: Path
    ipc: Path  # never looked at: only passed to codex
    cwd: Path


def check_runtime(
    client: Path | None,
    client_searched: Sequence[Path],
    codex: Path | None,
    codex_searched: Sequence[Path],
    ipc: Path,
    cwd: Path,
) -> tuple[Runtime | None, list[Missing]]:
    """The runtime, or every part of it that is missing, each with its own fix.

    ``ipc`` is not checked (see the module notes): a service that never ran is Sky's to report,
    and doctor's ``runtime_missing`` finding says to use Computer Use once."""
    missing: list[Missing] = []
    if client is None:
        missing.append(
            Missing(
                "Sky's client SkyComputerUseClient",
                tuple(str(p) for p in client_searched),
                "install or update ChatGPT or Codex and turn on Computer Use once (it installs "
                "Codex Computer Use.app), or point backend.sky_client / DESKHAND_SKY_CLIENT at "
                "the client",
            )
        )
    if codex is None:
        missing.append(
            Missing(
                "a signed codex to start Sky from",
                tuple(str(p) for p in codex_searched),
                "install ChatGPT or Codex from OpenAI (Homebrew's codex is not signed by OpenAI "
                "and Sky refuses it), or point backend.codex / DESKHAND_CODEX at the codex "
                "inside one of them",
            )
        )
    if not cwd.is_dir():
        missing.append(
            Missing(
                "Computer Use's working directory",
                (str(cwd),),
                "turn on Computer Use in ChatGPT or Codex once (it creates the directory), or "
                "set backend.cwd to an existing directory",
            )
        )
    if missing or client is None or codex is None:
        return None, missing
    return Runtime(client=client, codex=codex, ipc=ipc, cwd=cwd), []


def argv(recipe: str, rt: Runtime, shape: Shape = ASSUMED) -> tuple[str, ...]:
    """The jump host's command line for ``recipe``, spelt the way this codex takes it.

    A pinned recipe whose option the shape lacks is spelt as the predecessor spelt it, for
    codex to accept or refuse."""
    head = (str(rt.codex), *shape.subcommand)
    client = ("--", str(rt.client), "mcp")
    if recipe == "permissions_profile":
        socket = (shape.unix_socket, str(rt.ipc)) if shape.unix_socket else ()
        return (*head, shape.profile or ASSUMED.profile, ":danger-full-access", *socket, *client)
    if recipe == "config_override":
        config = shape.config or ASSUMED.config
        return (*head, config, 'sandbox_mode="danger-full-access"', *client)
    if recipe == "sandbox_state":
        state = {
            "permissionProfile": {"type": "disabled", "fileSystem": {"type": "unrestricted"}},
            "sandboxCwd": rt.cwd.absolute().as_uri(),
        }
        compact = json.dumps(state, separators=(",", ":"))
        option = shape.state_json or ASSUMED.state_json
        return (*head, option, compact, *client)
    raise ValueError(f"unknown Sky recipe {recipe!r}")


def order(
    pinned: str, remembered: str, offered: Sequence[str] = RECIPES
) -> tuple[tuple[str, ...], str]:
    """The recipes to try, in order, and why that order: ``pinned``, ``remembered`` or
    ``default``. Only the ``offered`` ones (those this codex has the options for) are tried,
    unless one is pinned: a pin is the person's word and codex answers it."""
    if pinned != "auto":
        return (pinned,), "pinned"
    usable = tuple(r for r in RECIPES if r in offered) or RECIPES
    if remembered in usable and remembered != usable[0]:
        return (remembered, *(r for r in usable if r != remembered)), "remembered"
    return usable, "remembered" if remembered == usable[0] else "default"


def refusal(returncode: int | None, stderr: Sequence[str]) -> str:
    """Why a jump host that ended before the handshake finished refused this recipe, or ``""``
    when its end says nothing about the recipe (then no other recipe is tried)."""
    if returncode is None or returncode == 0:
        return ""
    text = "\n".join(stderr)
    if any(marker in text for marker in _USAGE_MARKERS):
        return f"codex did not accept this command line (exit {returncode})"
    if returncode in SANDBOX_ABORT_STATUSES:
        return (
            f"codex's sandbox stopped the client (exit {returncode}): this codex ran it read-only"
        )
    return ""


class RecipeMemory:
    """Which recipe last worked with which codex: ``{"codex": path, "recipe": name}``.

    One small owner-only file; a missing or unreadable file means nothing is remembered, and a
    failed write only costs the next start its first guess.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, codex: Path) -> str:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        if not isinstance(data, dict) or data.get("codex") != str(codex):
            return ""
        recipe = data.get("recipe")
        return recipe if isinstance(recipe, str) and recipe in RECIPES else ""

    def write(self, codex: Path, recipe: str) -> None:
        """Remember ``recipe`` for ``codex`` (atomic replace). Raises OSError."""
        if self.read(codex) == recipe:
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        text = json.dumps({"codex": str(codex), "recipe": recipe}) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".sky-recipe.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

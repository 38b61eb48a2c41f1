"""Plain values of the backend client: how to launch a backend, what it said, a call's result.

Kept apart from the connection so that the process and routing code can name them without an
import cycle. No behaviour beyond small lookups.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.results import ToolOutput

ApprovalCallback = Callable[[ap.Confirmation], Awaitable[Literal["accept", "decline"]]]


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """How to start a backend process.

    Sky has several command lines (recipes) that may or may not work with the installed
    ``codex``: ``fallbacks`` are tried in order when this one is refused at start, and only
    then, which ``refusal`` decides from the exit status and stderr (``""``: not a refusal).
    ``remember`` is told the recipe that worked.
    """

    kind: str  # sky | sim | command | atspi
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None = None
    notice: str = ""  # shown once when the backend starts (e.g. why auto picked sim)
    recipe: str = ""  # the name of this command line, for backends that have several
    recipe_choice: str = ""  # why this recipe goes first: default, remembered or pinned
    fallbacks: tuple[LaunchSpec, ...] = ()
    refusal: Callable[[int | None, Sequence[str]], str] | None = None
    remember: Callable[[str], None] | None = None
    disclaim: bool = False  # spawn as its own responsible process where macOS allows it


@dataclass(frozen=True, slots=True)
class RecipeAttempt:
    """One try of a recipe at start: ``ok``, ``refused`` (the next one was tried) or
    ``failed`` (no other recipe was tried)."""

    recipe: str
    outcome: Literal["ok", "refused", "failed"]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    protocol_version: str
    name: str
    version: str
    capabilities: dict[str, Any]
    tools: tuple[dict[str, Any], ...]
    pid: int

    def tool(self, name: str) -> dict[str, Any] | None:
        for t in self.tools:
            if t.get("name") == name:
                return t
        return None


class CallResult(msgspec.Struct, frozen=True, kw_only=True):
    """A finished ``tools/call``: what came back and how its approvals were decided.

    A msgspec Struct rather than a frozen dataclass: built on every call, and much cheaper.
    """

    output: ToolOutput
    approval_reason: str | None
    approvals_asked: int
    usable: bool  # False if the result came while an approval was still pending
    elapsed_s: float

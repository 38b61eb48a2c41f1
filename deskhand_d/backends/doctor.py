"""Diagnosis of a backend without touching the desktop. Pure.

``doctor`` runs the MCP handshake (``initialize`` + ``tools/list``) and, for Sky, one read-only
tool call (``list_apps``), never an action. From what the backend said (stderr, how its process
ended, the probe's result or the last error result) it reports how the advertised tool surface
differs from what Deskhand expects, and recognises each known way Sky fails, each with what to
do about it (:data:`KNOWN_FAILURES` for texts, :func:`exit_findings` for how a process ended,
:func:`start_hung_finding` for a start Deskhand gave up on, :func:`runtime_finding` for a
runtime that is not installed).

Who ended a process matters: a SIGKILL is a launch-constraint clue only when Deskhand did not
send it. After a start phase timed out, Deskhand stops the process itself (SIGTERM, then
SIGKILL), and that is reported as the timeout it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from deskhand_d import surface
from deskhand_d.backends.skylaunch import SANDBOX_ABORT_STATUSES


@dataclass(frozen=True, slots=True)
class Difference:
    tool: str
    problem: str


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    evidence: str
    remedy: str


PERMISSIONS: Final = (
    "System Settings → Privacy & Security → Accessibility, and → Screen & System Audio "
    "Recording (Screen Recording before macOS 15): turn on Codex Computer Use in both (never "
    "Python or the terminal)"
)
CRASH_REPORTS: Final = (
    "Console → Crash Reports (or ~/Library/Logs/DiagnosticReports): the newest "
    "SkyComputerUseClient report says 'Launch Constraint Violation' when this is the cause"
)

# (code, substrings any of which identifies it, remedy). Texts are Sky's; remedies are ours.
KNOWN_FAILURES: Final = (
    (
        "not_authenticated",
        ("Sender process is not authenticated",),
        "Sky refused the tool call because it does not trust the program that started it: "
        "that must be a codex signed by OpenAI. Point backend.codex at the codex inside "
        "ChatGPT.app or Codex.app (not Homebrew's), check that the jump host line says "
        "disclaimed, then run doctor again.",
    ),
    (
        "launch_constraint",
        ("Launch Constraint Violation", "launch constraint", "LAUNCH_CONSTRAINT"),
        "macOS refused to run the Sky client from here: it runs only from its place inside the "
        "installed Codex Computer Use app, under an OpenAI-signed parent. Reinstall or update "
        f"ChatGPT or Codex, keep backend.codex on the codex shipped with it; see {CRASH_REPORTS}.",
    ),
    (
        "permissions_pending",
        ("Computer Use permissions are still pending",),
        "Finish granting Accessibility and Screen Recording to Codex Computer Use in its "
        "window, then run doctor again.",
    ),
    (
        "permissions_missing",
        ("Computer Use permissions are not granted",),
        f"Codex Computer Use needs two grants: {PERMISSIONS}; then run doctor again.",
    ),
    (
        "mac_locked",
        ("The Mac is locked",),
        "The Mac is locked and Sky does not act on a locked screen: unlock it, then run doctor "
        "again.",
    ),
    (
        "turn_ended",
        ("because the current turn ended",),
        "Sky answers every call with 'turn ended' until its client starts afresh: run "
        "`deskhandctl shutdown` (the daemon and its Sky client start again with the next "
        "command), then run doctor again.",
    ),
    (
        "translocated",
        ("Apple event error -1708", "error -1708"),
        "Sky's service runs from a quarantined or translocated copy, which macOS keeps from "
        "answering: quit Codex Computer Use, let ChatGPT or Codex install Computer Use in its "
        "own place (never open a copy from Downloads or a disk image), open it once, then run "
        "doctor again.",
    ),
    (
        "version_mismatch",
        ("version mismatch",),
        "Relaunch the ChatGPT or Codex app so the Computer Use client and service match.",
    ),
    (
        "runtime_missing",
        ("its runtime app is missing",),
        "Sky's client cannot reach the Computer Use service (it is not running, or has never "
        "run here): open ChatGPT or Codex and use Computer Use there once, which starts the "
        "service and sets it up, then run doctor again; if it keeps saying so, relaunch "
        "ChatGPT.",
    ),
    (
        "computer_use_disabled",
        ("Computer Use is disabled by your configuration",),
        "Computer Use is turned off in ChatGPT or Codex: turn it on in their settings, then "
        "run doctor again.",
    ),
)


def findings(texts: Iterable[str]) -> list[Finding]:
    """Known failure texts found in ``texts`` (each code at most once)."""
    out: list[Finding] = []
    seen: set[str] = set()
    for text in texts:
        for code, needles, remedy in KNOWN_FAILURES:
            if code in seen:
                continue
            hit = next((n for n in needles if n in text), None)
            if hit is not None:
                seen.add(code)
                out.append(Finding(code=code, evidence=_excerpt(text, hit), remedy=remedy))
    return out


def exit_findings(
    returncode: int | None, recipe: str = "", choice: str = "", *, sigkill_sent: bool = False
) -> list[Finding]:
    """What the way Sky's jump host ended before its handshake says (nothing for others).

    A launch-constraint kill leaves no text behind, only SIGKILL (-9 from the process itself,
    137 from a parent that reports it like a shell); the sandbox's abort is exit 134.
    ``sigkill_sent``: Deskhand sent the process group SIGKILL itself, so such a status is
    its own doing and says nothing about a launch constraint.
    """
    if returncode in (-9, 137) and not sigkill_sent:
        return [
            Finding(
                code="launch_constraint",
                evidence=f"the Sky client was killed with SIGKILL before its handshake "
                f"(exit {returncode})",
                remedy="macOS kills the client like this when its launch constraint is "
                f"violated. Look at {CRASH_REPORTS}. Then reinstall or update ChatGPT or Codex "
                "so the client is back inside Codex Computer Use.app, and keep backend.codex on "
                "the codex shipped with it.",
            )
        ]
    if returncode in SANDBOX_ABORT_STATUSES:
        pinned = choice == "pinned"
        how = (
            f"backend.sky_recipe pins {recipe}: set it to auto (or permissions_profile)"
            if pinned
            else "leave backend.sky_recipe at auto"
        )
        return [
            Finding(
                code="sandbox_abort",
                evidence=f"codex's sandbox stopped the Sky client (exit {returncode})",
                remedy=f"This codex ran the client in its read-only sandbox: {how}, update "
                "ChatGPT or Codex, then run doctor again.",
            )
        ]
    return []


def start_hung_finding(phase: str, waited_s: float, signals: Iterable[str]) -> Finding:
    """A start phase got no answer within ``backend.start_timeout_s`` and Deskhand stopped
    the jump host (``signals``: what it sent, in order)."""
    method = {"tools_list": "tools/list"}.get(phase, phase or "its handshake")
    sent = list(signals)
    how = f" with {' then '.join(sent)}" if sent else ""
    return Finding(
        code="start_hung",
        evidence=f"the Sky client did not answer {method} within {waited_s:g} s; Deskhand "
        f"stopped it{how}",
        remedy="Deskhand gave up waiting, so this is not a crash or a launch constraint. Look "
        "for a prompt on screen (an Automation request for codex, or Computer Use asking for "
        "its permissions) and answer it, open ChatGPT or Codex so that the Computer Use "
        "service runs, and if this Mac is slow raise backend.start_timeout_s; then run doctor "
        "again.",
    )


def recipe_finding(recipe: str, choice: str, detail: str) -> Finding:
    """The jump host refused the command line of a recipe and no other was tried."""
    if choice == "pinned":
        how = f"backend.sky_recipe pins {recipe}: set it to auto so Deskhand tries the others"
    else:
        how = "update ChatGPT or Codex (every recipe Deskhand knows was refused)"
    return Finding(code="recipe_refused", evidence=f"{recipe}: {detail}", remedy=f"{how}.")


def runtime_finding(data: Mapping[str, Any]) -> Finding | None:
    """Every missing part of Sky's runtime, named, from a ``runtime_missing`` refusal."""
    missing = data.get("missing")
    if data.get("reason") != "runtime_missing" or not isinstance(missing, list):
        return None
    named: list[str] = []
    fixes: list[str] = []
    for item in missing:
        if not isinstance(item, dict):
            continue
        where = " or ".join(str(p) for p in item.get("paths", []))
        named.append(f"{item.get('what', '?')}: {where}")
        fixes.append(str(item.get("fix", "")))
    return Finding(
        code="runtime_missing",
        evidence="not found: " + "; ".join(named),
        remedy="; ".join(f for f in fixes if f) + ".",
    )


def hung_finding(tool: str, waited_s: float) -> Finding:
    """A probe call that got no answer: Sky waits on macOS, or on a parent it does not trust."""
    return Finding(
        code="call_hung",
        evidence=f"{tool} got no answer within {waited_s:g} s",
        remedy="Sky hangs like this while macOS waits for an Automation (Apple Events) answer, "
        "or on some Macs when its parent is not trusted: look for a prompt on screen, allow "
        "codex to control Codex Computer Use in System Settings → Privacy & Security → "
        "Automation, check that backend.codex is OpenAI's codex, then run doctor again.",
    )


def _excerpt(text: str, needle: str, width: int = 160) -> str:
    at = text.find(needle)
    start = max(0, at - 40)
    return " ".join(text[start : start + width].split())


def schema_differences(tools: Iterable[dict[str, Any]]) -> list[Difference]:
    """How the advertised tools differ from Sky's surface (descriptions are ignored)."""
    advertised: dict[str, dict[str, Any]] = {
        str(t["name"]): t for t in tools if isinstance(t.get("name"), str)
    }
    out: list[Difference] = []
    for name in surface.TOOL_ORDER:
        tool = advertised.get(name)
        if tool is None:
            out.append(Difference(name, "missing: the backend does not offer this tool"))
            continue
        schema = tool.get("inputSchema")
        have = surface.structural(schema if isinstance(schema, dict) else {})
        want = surface.structural(surface.input_schema(name))
        out.extend(Difference(name, p) for p in _compare(have, want))
    for extra in sorted(n for n in advertised if n not in surface.TOOL_ORDER):
        out.append(Difference(extra, "extra: not part of Sky's surface (Deskhand ignores it)"))
    return out


def _compare(have: dict[str, Any], want: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if have["type"] != want["type"]:
        problems.append(f"schema type is {have['type']!r}, expected {want['type']!r}")
    if have["additionalProperties"] != want["additionalProperties"]:
        problems.append(
            f"additionalProperties is {have['additionalProperties']!r}, "
            f"expected {want['additionalProperties']!r}"
        )
    hp, wp = have["properties"], want["properties"]
    for prop in sorted(set(wp) - set(hp)):
        problems.append(f"argument {prop} is missing")
    for prop in sorted(set(hp) - set(wp)):
        problems.append(f"argument {prop} is not expected")
    for prop in sorted(set(hp) & set(wp)):
        if hp[prop] != wp[prop]:
            problems.append(f"argument {prop} is {hp[prop]}, expected {wp[prop]}")
    if have["required"] != want["required"]:
        problems.append(f"required is {have['required']}, expected {want['required']}")
    return problems

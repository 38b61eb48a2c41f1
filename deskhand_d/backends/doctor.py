"""Diagnosis of a backend without touching the desktop. Pure.

``doctor`` only ever runs the MCP handshake (``initialize`` + ``tools/list``), never a tool
call. From that and from what the backend said earlier (stderr, exit status, the last error
result) it reports how the advertised tool surface differs from what Deskhand expects, and
recognises Sky's known failure texts, each with one line saying what to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from deskhand_d.backends import surface


@dataclass(frozen=True, slots=True)
class Difference:
    tool: str
    problem: str


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    evidence: str
    remedy: str


# (code, substrings any of which identifies it, remedy). Texts are Sky's; remedies are ours.
KNOWN_FAILURES: Final = (
    (
        "not_authenticated",
        ("Sender process is not authenticated",),
        "Sky only serves tool calls to a signed parent: start it through a signed codex "
        "(backend.codex / DESKHAND_CODEX), not directly.",
    ),
    (
        "launch_constraint",
        ("Launch Constraint Violation", "launch constraint", "LAUNCH_CONSTRAINT"),
        "macOS refused to run the Sky client from here: use the copy inside the installed "
        "Codex Computer Use app, not a moved or copied one.",
    ),
    (
        "permissions_pending",
        ("Computer Use permissions are still pending",),
        "Finish granting Accessibility and Screen Recording in the Computer Use window, then "
        "try again.",
    ),
    (
        "permissions_missing",
        ("Computer Use permissions are not granted",),
        "Grant Accessibility and Screen Recording to Codex Computer Use in System Settings → "
        "Privacy & Security.",
    ),
    (
        "translocated",
        ("Apple event error -1708",),
        "The Computer Use app runs from a quarantined or translocated copy: move it to its "
        "installed location and open it once.",
    ),
    (
        "version_mismatch",
        ("version mismatch",),
        "Relaunch the ChatGPT or Codex app so the Computer Use client and service match.",
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

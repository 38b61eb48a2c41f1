"""What the CLI shows about the desktop behind the daemon: the backend line of ``status`` (above
all, that a simulated desktop is not the real one) and ``doctor``'s desktop checks.

Built on :mod:`deskhandctl.cli.render` (whose summaries these extend) and, like it, pure: dicts in,
text out, missing fields shown as ``?``.
"""

from __future__ import annotations

from deskhandctl.cli import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SIMULATED = "SIMULATED desktop: made-up apps, not this computer's; nothing reaches a real app"


def backend_line(result: dict[str, Any]) -> str | None:
    """``status``'s line about the backend, or None when the daemon did not say."""
    backend = result.get("backend")
    if not isinstance(backend, dict):
        return None
    kind = backend.get("kind", "?")
    if backend.get("simulated"):
        return f"  backend   {kind}: {SIMULATED}"
    pid = backend.get("running_pid")
    if pid:
        return f"  backend   {kind}, running (pid {pid})"
    if kind == "auto":  # not resolved: auto may have refused the desktop it found
        return "  backend   auto, not chosen yet (`deskhandctl doctor` shows what it found)"
    return f"  backend   {kind}, not running (starts on first use)"


def status(result: dict[str, Any]) -> str:
    """``render.status`` with the backend line after the protocol line."""
    text = render.status(result)
    line = backend_line(result)
    if line is None:
        return text
    lines = text.split("\n")
    at = next((i for i, old in enumerate(lines) if old.startswith("  clients")), len(lines))
    lines.insert(at, line)
    return "\n".join(lines)


_SHOWN = {"ok": "ok", "failed": "FAILED", "not_checked": "not checked"}


def checks(result: dict[str, Any]) -> list[str]:
    """``doctor``'s desktop lines: simulated or not, then one line per check, fixes indented."""
    lines = []
    if result.get("simulated"):
        lines.append(f"desktop:    {SIMULATED}")
    found = [c for c in result.get("checks") or [] if isinstance(c, dict)]
    if found:
        width = max(len(str(c.get("name", "?"))) for c in found)
        lines.append("desktop checks (read-only: no input was sent):")
        for c in found:
            shown = _SHOWN.get(str(c.get("status")), "?")
            name = str(c.get("name", "?"))
            lines.append(f"  {shown:<11} {name:<{width}}  {c.get('detail', '')}")
            if c.get("status") == "failed" and c.get("fix"):
                lines.append(f"  {'':<11} {'':<{width}}  fix: {c['fix']}")
    return lines


_CHOICE = {
    "default": "the default order",
    "remembered": "the one that last worked here, first",
    "pinned": "pinned by backend.sky_recipe",
}
_PROBE = {"ok": "ok", "failed": "FAILED", "not_checked": "not checked"}


def launch_lines(result: dict[str, Any]) -> list[str]:
    """Sky's lines in ``doctor``: the jump host's recipe, each one tried, responsibility, and
    the read-only call that proves the action path."""
    lines = []
    if result.get("recipe"):
        why = _CHOICE.get(str(result.get("recipe_choice")), "?")
        lines.append(f"recipe:     {result['recipe']} ({why})")
        tried = [a for a in result.get("attempts") or [] if isinstance(a, dict)]
        if len(tried) > 1 or any(a.get("outcome") != "ok" for a in tried):
            for a in tried:
                detail = f": {a['detail']}" if a.get("detail") else ""
                lines.append(f"  tried {a.get('recipe', '?')}: {a.get('outcome', '?')}{detail}")
    if result.get("responsibility"):
        lines.append(f"jump host:  {result['responsibility']}")
    probe = result.get("probe")
    if isinstance(probe, dict):
        shown = _PROBE.get(str(probe.get("status")), "?")
        lines.append(f"action:     {shown}: {probe.get('detail', '')}")
    return [render.printable(line) for line in lines]


def doctor(result: dict[str, Any]) -> str:
    """``render.doctor`` with Sky's launch lines before the problems, then the desktop lines."""
    lines = render.doctor(result).split("\n")
    at = next((i for i, old in enumerate(lines) if old.startswith("problem:")), len(lines))
    lines[at:at] = launch_lines(result)
    return "\n".join([*lines, *checks(result)])


def healthy(result: dict[str, Any]) -> bool:
    """A working handshake, nothing found, the expected surface, no failed desktop check, and
    (Sky) a read-only call that got through."""
    failed = any(
        isinstance(c, dict) and c.get("status") == "failed" for c in result.get("checks") or []
    )
    probe = result.get("probe")
    proven = not isinstance(probe, dict) or probe.get("status") == "ok"
    return (
        bool(result.get("handshake_ok"))
        and not failed
        and proven
        and not (result.get("findings") or result.get("schema_differences"))
    )

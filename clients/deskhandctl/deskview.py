"""What the CLI shows about the desktop behind the daemon: the backend line of ``status`` (above
all, that a simulated desktop is not the real one) and ``doctor``'s desktop checks.

Built on :mod:`deskhandctl.render` (whose summaries these extend) and, like it, pure: dicts in,
text out, missing fields shown as ``?``.
"""

from __future__ import annotations

from deskhandctl import render

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


def doctor(result: dict[str, Any]) -> str:
    """``render.doctor`` followed by the desktop lines."""
    return "\n".join([render.doctor(result), *checks(result)])


def healthy(result: dict[str, Any]) -> bool:
    """A working handshake, nothing found, the expected surface and no failed desktop check."""
    failed = any(
        isinstance(c, dict) and c.get("status") == "failed" for c in result.get("checks") or []
    )
    return (
        bool(result.get("handshake_ok"))
        and not failed
        and not (result.get("findings") or result.get("schema_differences"))
    )

"""Human-readable output for the CLI's commands (``--json`` bypasses all of this).

Functions take the decoded result objects (plain dicts, shaped as in ``deskhand_d.protocol``)
and return text; they never print, so tests compare strings. Missing fields are shown as ``?``
rather than crashing, so an older or newer daemon still gets a readable summary.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def duration(seconds: object) -> str:
    """``3d 4h``, ``2h 05m``, ``7m 03s`` or ``4.2s``: two units at most."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s"


def _ms(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.2f}"
    return "?"


def _client_line(client: object) -> str:
    if not isinstance(client, dict):
        return "    ?"
    name = client.get("name", "?")
    version = client.get("version") or ""
    kind = client.get("kind", "?")
    label = f"{name} {version}".strip()
    return (
        f"    {label} ({kind})  pid {client.get('pid', '?')}  uid {client.get('uid', '?')}  "
        f"connected {duration(client.get('connected_s'))}"
    )


def status(result: dict[str, Any]) -> str:
    """The ``status`` summary: who, since when, where, who is connected, how requests went."""
    subprotocols = result.get("subprotocols")
    offered = ", ".join(str(s) for s in subprotocols) if isinstance(subprotocols, list) else ""
    lines = [
        f"deskhand-d {result.get('version', '?')} is running "
        f"(pid {result.get('pid', '?')}, up {duration(result.get('uptime_s'))})",
        f"  socket    {result.get('socket', '?')}",
        f"  protocol  {result.get('protocol', '?')}" + (f" ({offered})" if offered else ""),
    ]
    clients = result.get("clients")
    clients = clients if isinstance(clients, list) else []
    lines.append(f"  clients   {len(clients)} connected")
    lines.extend(_client_line(client) for client in clients)
    ops = result.get("ops")
    if not isinstance(ops, dict) or not ops:
        lines.append("  requests  none yet")
        return "\n".join(lines)
    width = max(len("op"), *(len(str(op)) for op in ops))
    lines.append("  requests")
    lines.append(
        f"    {'op':<{width}}  {'count':>7}  {'errors':>6}  {'p50 ms':>8}  {'p90 ms':>8}  "
        f"{'p99 ms':>8}"
    )
    for op in sorted(ops):
        stats = ops[op] if isinstance(ops[op], dict) else {}
        lines.append(
            f"    {op:<{width}}  {stats.get('count', '?'):>7}  {stats.get('errors', '?'):>6}  "
            f"{_ms(stats.get('p50_ms')):>8}  {_ms(stats.get('p90_ms')):>8}  "
            f"{_ms(stats.get('p99_ms')):>8}"
        )
    return "\n".join(lines)


def pong(welcome: dict[str, Any], rtt_s: float) -> str:
    """The ``ping`` line: who answered and how fast."""
    return (
        f"pong from deskhand-d {welcome.get('daemon_version', '?')} "
        f"(pid {welcome.get('pid', '?')}) in {rtt_s * 1000:.2f} ms"
    )


def shutting_down(welcome: dict[str, Any]) -> str:
    """The ``shutdown`` acknowledgement."""
    return f"deskhand-d (pid {welcome.get('pid', '?')}) is shutting down"


def notice(event: dict[str, Any]) -> str | None:
    """A ``notice`` event as one line for stderr; None for events we do not show."""
    if event.get("kind") != "notice":
        return None
    return f"deskhand-d: {event.get('message', '')}"


def doctor(result: dict[str, Any]) -> str:
    """Human output of ``doctor``: backend, handshake, surface differences, known failures."""
    lines = [f"backend:    {result.get('backend', '?')}"]
    argv = result.get("argv") or []
    if argv:
        lines.append("command:    " + " ".join(str(a) for a in argv))
    if result.get("notice"):
        lines.append(f"note:       {result['notice']}")
    if result.get("handshake_ok"):
        lines.append(
            f"handshake:  ok ({result.get('server_name') or 'unnamed server'}, "
            f"protocol {result.get('protocol_version') or '?'}, pid {result.get('pid')})"
        )
        tools = result.get("tools") or []
        lines.append(f"tools:      {len(tools)}: {', '.join(str(t) for t in tools)}")
    else:
        err = result.get("error") or {}
        lines.append(f"handshake:  FAILED: {err.get('code', '?')}: {err.get('message', '')}")
        if result.get("exit_status") is not None:
            lines.append(f"exit:       {result['exit_status']}")
        for line in result.get("stderr_tail") or []:
            lines.append(f"  stderr | {line}")
    diffs = result.get("schema_differences") or []
    if diffs:
        lines.append(f"surface:    {len(diffs)} difference(s) from what Deskhand expects")
        lines.extend(f"  - {d.get('tool')}: {d.get('problem')}" for d in diffs)
    elif result.get("handshake_ok"):
        lines.append("surface:    matches what Deskhand expects")
    for f in result.get("findings") or []:
        lines.append(f'problem:    {f.get("code")}: seen "{f.get("evidence")}"')
        lines.append(f"  fix: {f.get('remedy')}")
    return "\n".join(lines)

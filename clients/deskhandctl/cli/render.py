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


def _native_lines(result: dict[str, Any]) -> list[str]:
    """Native mode's part of ``status`` (absent from daemons that predate it)."""
    if not any(key in result for key in ("sessions", "queue_depth", "desktop_holder")):
        return []
    holder = result.get("desktop_holder") or "nobody"
    lines = [
        f"  native    {result.get('sessions', '?')} session(s), {result.get('queue_depth', '?')} "
        f"queued, desktop held by {holder}"
    ]
    if result.get("locked_by"):
        lines.append(
            f"  LOCKED    emergency stop by {result['locked_by']}; 'deskhandctl unlock' releases it"
        )
    return lines


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
    lines.extend(_native_lines(result))
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


# ----- native mode ------------------------------------------------------------------------------

# Characters that could drive the terminal (C0 but tab and newline, DEL, C1) or reorder what is
# shown (bidi controls): app and backend text is untrusted, so these are shown escaped.
_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(32), *range(127, 160)) if code not in (9, 10)
}
_WITH_BIDI = {
    **_CONTROLS,
    **{ord(c): f"\\u{ord(c):04x}" for c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"},
    **{ord(c): f"\\u{ord(c):04x}" for c in "\u2066\u2067\u2068\u2069"},
}
_NEWLINES = str.maketrans({"\r": "\n", "\u2028": "\n", "\u2029": "\n"})


def printable(text: str, *, bidi: bool = False) -> str:
    """``text`` safe for a terminal: control characters (and with ``bidi`` the bidirectional
    controls) as ``\\x1b``-style escapes; newlines kept, ``\\r\\n`` and lone ``\\r`` as newlines."""
    text = text.replace("\r\n", "\n").translate(_NEWLINES)
    return text.translate(_WITH_BIDI if bidi else _CONTROLS)


def quoted(text: str, *, limit: int = 4000) -> str:
    """Untrusted text as a quotation: every line behind ``> ``, at most ``limit`` characters."""
    cut = len(text) - limit
    body = printable(text[:limit] if cut > 0 else text, bidi=True)
    lines = [f"  > {line}" for line in body.split("\n")]
    if cut > 0:
        lines.append(f"  (and {cut} more characters, not shown)")
    return "\n".join(lines)


def _state_line(state_id: object, expires_in_s: object = None) -> str:
    valid = f", valid {expires_in_s:g} s" if isinstance(expires_in_s, int | float) else ""
    return f"state: {state_id} (single use{valid})"


def observation(result: dict[str, Any], screenshot_note: str | None) -> str:
    """``observe``: the tree, what became of the screenshot, and the state id on the last line."""
    lines = [printable(str(result.get("text", ""))).rstrip("\n")]
    if screenshot_note:
        lines.append(f"screenshot: {screenshot_note}")
    if result.get("approval_reason"):
        lines.append(f"approval: {printable(str(result['approval_reason']))}")
    lines.append(_state_line(result.get("state_id", "?"), result.get("expires_in_s")))
    return "\n".join(lines)


def action(result: dict[str, Any], screenshot_note: str | None = None) -> str:
    """An ``action`` result: the backend's text, what became of the screenshot (only when
    ``--screenshot`` asked for it), how it was delivered, the new state id, and in jev mode the
    steps the planner's handoff has left (as the daemon counts them)."""
    lines = [printable(str(result.get("text", ""))).rstrip("\n")]
    if screenshot_note:
        lines.append(f"screenshot: {screenshot_note}")
    lines.append(result_delivery(result))
    effect = effect_line(result)
    if effect:
        lines.append(effect)
    if result.get("approval_reason"):
        lines.append(f"approval: {printable(str(result['approval_reason']))}")
    if result.get("state_id"):
        lines.append(_state_line(result["state_id"]))
    steps = result.get("handoff_steps_left")
    if isinstance(steps, int) and not isinstance(steps, bool):
        lines.append(f"handoff: {steps} native step(s) left" if steps else "handoff: used up")
    return "\n".join(lines)


def allowed_apps(result: dict[str, Any]) -> str:
    """``apps list`` and ``apps add``: the allowlist, the apps added to its file, the file."""
    apps = [str(app) for app in result.get("apps") or []]
    added_apps = [str(app) for app in result.get("in_apps_file") or []]
    lines = []
    added = result.get("added")
    if added is not None:
        lines.append("added to the allowlist" if added else "already on the allowlist")
    lines.append(f"allowed apps ({len(apps)}): " + (", ".join(apps) if apps else "none"))
    lines.append("added with 'apps add': " + (", ".join(added_apps) if added_apps else "none"))
    lines.append(f"allowlist file: {result.get('file', '?')}")
    return printable("\n".join(lines))


def grants(command: str, result: dict[str, Any]) -> str:
    """``grants list|revoke|restore``: one block per saved grant, then the file."""
    items = [g for g in result.get("grants") or [] if isinstance(g, dict)]
    lines = []
    if command.endswith("revoke"):
        lines.append(
            f"revoked {len(items)} grant(s); {result.get('cancelled', 0)} request(s) cancelled, "
            "the backend restarts on the next call and every state id is retired"
        )
        if result.get("not_saved"):
            lines.append(
                "the revocation is in force now but could not be saved "
                f"({result['not_saved']}); deskhand-d keeps refusing the grant and saves it "
                "as soon as the file can be written — free space there, and keep the daemon "
                "running until then"
            )
    elif command.endswith("restore"):
        lines.append(f"restored {len(items)} grant(s)")
    elif not items:
        lines.append("no saved grants (answer 'always' to a consent question to make one)")
    for g in items:
        status = f"revoked {g['revoked_at']}" if g.get("revoked_at") else "active"
        lines.append(f"{g.get('app', '?')}: {status}")
        lines.append(f"  program: {g.get('path', '?')}")
        lines.append(f"  vouched for by: {g.get('kind', '?')} {g.get('signer') or ''}".rstrip())
        lines.append(f"  granted: {g.get('granted_at', '?')}")
    lines.append(f"grants file: {result.get('file', '?')}")
    return printable("\n".join(lines))


def run_result(result: dict[str, Any]) -> str:
    """``run``: how the Jev run ended, and the handoff if Jev handed a step back."""
    verified = " (verified)" if result.get("verified") else ""
    lines = [
        f"{result.get('status', '?')}: {result.get('reason', '?')}{verified}, "
        f"{result.get('steps', 0)} action(s) in {result.get('elapsed_ms', 0)} ms"
    ]
    if result.get("detail"):  # a refusal or failure ended it: the cause and what to do
        lines.append(f"cause: {result['detail']}")
    if result.get("outcome_unknown"):
        lines.append("the last action's outcome is unknown: observe before doing anything else")
    target = result.get("target")
    if isinstance(target, dict):
        lines.append(f"target: {target.get('role', '?')} {target.get('label', '')!r}")
    planned = result.get("planned")
    if isinstance(planned, dict):
        lines.append("planned: " + ", ".join(f"{k}={v}" for k, v in planned.items()))
    handoff = result.get("handoff")
    if isinstance(handoff, dict):
        lines.append(
            f"handoff: token {handoff.get('token')} for {handoff.get('app')}, "
            f"{handoff.get('remaining_steps')} step(s) left (pass --handoff to native actions)"
        )
        lines.append(f"  {handoff.get('instruction', '')}")
    remaining = result.get("budget_remaining_actions")
    if remaining is not None:
        lines.append(
            f"turn budget left: {remaining} action(s), {result.get('budget_remaining_s')} s"
        )
    incomplete = " (incomplete: the run stopped because it could not be recorded)"
    lines.append(
        f"trace: {result.get('trace_path') or 'none'}"
        + (incomplete if result.get("trace_incomplete") else "")
    )
    return printable("\n".join(lines))


def mode(result: dict[str, Any]) -> str:
    """``mode``: the session's mode and why, if the daemon says (and what to do about it)."""
    reason = result.get("reason")
    line = f"mode: {result.get('mode', '?')}" + (f" ({printable(str(reason))})" if reason else "")
    detail = result.get("detail")
    return f"{line}\n  {printable(str(detail))}" if detail else line


def lock(result: dict[str, Any]) -> str:
    """``stop`` and ``unlock``: whether the daemon is locked, by whom, what was cancelled."""
    if not result.get("locked"):
        return "deskhand-d is unlocked: native actions are accepted again"
    by = f" by {result['by']}" if result.get("by") else ""
    return (
        f"deskhand-d is stopped and locked{by}; {result.get('cancelled', 0)} request(s) "
        "cancelled. 'deskhandctl unlock' releases it."
    )


# ----- delivery: what reached the desktop --------------------------------------------------------
# Every reply to a desktop command (observe, the actions, list-apps, launch) is shown with exactly
# one line that starts with "delivery: ", naming the value the daemon stated in the reply (or in
# an error's data) and what it means. Where no value came, the line says unknown: this client
# never works one out for itself from an error code or the message's words.

DELIVERIES = ("refused", "dispatched", "partial", "unknown")


def delivery_value(value: object) -> str:
    """``value`` if it is one of the four deliveries, else ``unknown``."""
    return value if isinstance(value, str) and value in DELIVERIES else "unknown"


def result_delivery(result: dict[str, Any]) -> str:
    """An action result's delivery line: ``delivery: dispatched``, with a note when the backend
    reported an error or when the reply named no delivery this client knows."""
    stated = result.get("delivery")
    value = delivery_value(stated)
    line = f"delivery: {value}"
    if value != stated:
        line += " (the reply did not say what reached the desktop; observe before acting again)"
    elif result.get("ok") is False:
        line += " (the backend reported an error, see above)"
    return line


_EFFECTS = {
    "changed": "reading the element back shows the change",
    "unreadable": "the app does not let the element be read back, so the change is unconfirmed",
}


def effect_line(result: dict[str, Any]) -> str:
    """``effect: changed (value): ...`` when the backend read the element back, else ``""``."""
    said = result.get("effect")
    if said not in _EFFECTS:
        return ""
    what = printable(str(result.get("effect_of") or ""))
    return f"effect: {said}{f' ({what})' if what else ''}: {_EFFECTS[str(said)]}"


def error_delivery(data: dict[str, Any], *, acts: bool) -> str:
    """The delivery line for an error reply to a desktop command, from ``data.delivery``.

    ``acts``: the command was an action (its words say "the action"; otherwise "the request",
    which an observation, an app list or a launch is). A value that is missing or not one of
    the four is reported as unknown, never guessed.
    """
    stated = data.get("delivery")
    value = delivery_value(stated)
    what = "the action" if acts else "the request"
    count = _count(data.get("delivered"))
    if value == "refused":
        return "delivery: refused: nothing was sent to the desktop"
    if value == "partial":
        sent = count or "part of the input"
        return (
            f"delivery: partial: partly delivered, {sent} reached the app before it stopped; "
            "observe again"
        )
    if value == "dispatched":
        if data.get("withheld") is True:
            return (
                "delivery: dispatched: the backend observed the app, and Deskhand withheld "
                "that observation; no input was sent to the app"
            )
        text = data.get("text")
        said = f"; it said:\n{quoted(text, limit=2000)}" if isinstance(text, str) and text else ""
        return (
            f"delivery: dispatched: the backend received {what} and answered; the message "
            f"above says what came of it{said}"
        )
    if stated is None:
        return (
            "delivery: unknown: the reply did not say whether anything reached the desktop; "
            "observe again before acting"
        )
    if stated != "unknown":
        return (
            f"delivery: unknown: the reply named a delivery this deskhandctl does not know "
            f"({printable(str(stated))}); observe again before acting"
        )
    sent = f" ({count} had been sent)" if count else ""
    effect = "happened" if acts else "taken effect"
    return (
        f"delivery: unknown: outcome unknown, {what} may or may not have {effect}{sent}; "
        "observe again"
    )


def lost_delivery(*, acts: bool, why: str) -> str:
    """The delivery line when no reply came at all (the daemon went away or did not answer in
    time, or this client was interrupted): unknown, and ``why``."""
    what = "the action" if acts else "the request"
    effect = "happened" if acts else "taken effect"
    return f"delivery: unknown: {why}; {what} may or may not have {effect}; observe again"


def _count(value: object) -> str:
    """``{"done": 93, "total": 240, "unit": "characters"}`` -> ``93 of 240 characters``."""
    if not isinstance(value, dict):
        return ""
    done, total, unit = value.get("done"), value.get("total"), value.get("unit")
    if type(done) is not int or type(total) is not int or not isinstance(unit, str):
        return ""
    return f"{done} of {total} {printable(unit)}"


def result(command: str, result: dict[str, Any]) -> str:
    """Any other result, by its kind (so an op whose result kind is new still prints)."""
    kind = result.get("kind")
    if kind == "action":
        return action(result)
    if kind == "app_list":
        return printable(str(result.get("text", ""))).rstrip("\n")
    if kind == "allowed_apps":
        return allowed_apps(result)
    if kind == "run":
        return run_result(result)
    if kind == "grants":
        return grants(command, result)
    if kind == "mode":
        return mode(result)
    if kind == "lock":
        return lock(result)
    if kind == "done":
        detail = result.get("detail")
        return f"{command}: done" + (f" ({printable(str(detail))})" if detail else "")
    fields = ", ".join(f"{k}: {v}" for k, v in result.items() if k != "kind")
    return printable(f"{command}: {kind}" + (f" ({fields})" if fields else ""))

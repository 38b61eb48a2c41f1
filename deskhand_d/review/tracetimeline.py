"""The per-step timeline of a Jev run trace, for ``deskhandctl trace show``. Pure.

One block per step, in the order the loop works: the snapshot it decided on, the candidates,
Jev's exchange, the normalised decision, the gate, the dispatch, what changed on screen (a diff
of the visible text elements between the re-read and the after-action tree) and the
verification; then how the run ended. Metadata traces show what they hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from deskhand_d.jev.task import plain
from deskhand_d.review import traceview as tv
from deskhand_d.review.traceview import Event


class _Fill(dict[str, Any]):
    """Fields for a line template: numbers as 0.00, anything missing or null as "–"."""

    def __missing__(self, key: str) -> str:
        return "–"

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        return "–" if value is None else tv._num(value) if type(value) is float else value


_LINES = {
    "task": 'Task: {appName}: "{goal}"; plan: {plan}; max {maxSteps} steps; verify: {verify}',
    "verification": "verification {at} (snapshot #{snapshotId}): {state}",
    "decision_output": "decision: {action} on {el} (target_index {target_index}, confidence "
    "{confidence}, done {done}, risk {risk})",
    "action_prepared": "prepared: {json}",
    "gate": "gate: {verdict} ({reason})",
    "decision": "decision: {action} on index {index} (confidence {confidence}, risk {risk}, "
    "done {done}, {latencyMs} ms); gate {status} ({reason}); {candidateCount} candidates",
    "snapshot": "snapshot {at} #{snapshotId}: {size}",
    "dispatch_start": "dispatch: {method} {json} on {el} (indices of snapshot #{snapshotId})",
    "dispatch_return": "  returned: {methodReturned} after {elapsedMs} ms",
    "action": "after: changed {changed} ({elapsedMs} ms)",
    "jev": "jev {kind} attempt {attempt}",
    "failure": "Failure in {phase}: {errorName}: {errorMessage} (outcome unknown: "
    "{outcomeUnknown})",
    "outcome": "Outcome: {status} ({reason}), verified {verified}, outcome unknown "
    "{outcome_unknown}",
    "finish": "Ending: {status} ({reason}) after {step} action(s), {elapsedMs} ms",
}


def _event_lines(e: Event, evs: list[Event], snaps: dict[str, str]) -> list[str]:
    name, sid, x = e["event"], e.get("snapshotId"), tv._d(e.get("exchange"))
    if name == "decision_input":
        cands, clip = tv._candidates(evs), ", clipped" if e.get("clipped") else ""
        recent = tv._d(e.get("input")).get("recentActions")
        recent = recent if isinstance(recent, list) and recent else [""]
        more = len(cands) - tv.SHOWN_CANDIDATES
        return [
            f"snapshot #{sid} ({tv._size(snaps.get(str(sid)))}): {len(cands)} candidates sent of "
            f"{e.get('totalCandidates')} eligible{clip}",
            *(
                f"  i{c.get('index')} {c.get('role')}: {plain(str(c.get('label')))[:50]} "
                f"[{c.get('score')}]"
                for c in cands[: tv.SHOWN_CANDIDATES]
            ),
            *([f"  … {more} more"] if more > 0 else []),
            *([f"  last recent action: {str(recent[-1])[:160]}"] if recent[-1] else []),
        ]
    quiet = e.get("status") == "preparing" or (name == "decision" and e.get("mode") == "full")
    if name not in _LINES or quiet:
        return []
    spec = tv._d(tv._d(e.get("verification")).get("specification"))
    fill = _Fill(
        {**e, **x, **tv._d(e.get("result")), **tv._d(e.get("decision")), **tv._d(e.get("gate"))}
    )
    fill.update(
        el=tv._el(e.get("target")),
        size=tv._size(e.get("ax")),
        json=json.dumps(e.get("arguments", e.get("action"))),
        state=("passed" if e.get("passed") else "not passed") if e.get("enabled") else "off",
        changed="yes" if e.get("changed") else "NO",
        plan=e.get("plan") or "–",
        verify=f'{spec.get("role")} = "{spec.get("labelEquals")}"' if spec else "none",
    )
    line = _LINES[name].format_map(fill)
    if name == "jev" and x.get("kind") == "response":
        ans = tv._d(tv._d(x.get("body")).get("answers"))
        picks = {q: tv._d(ans.get(q)) for q in ("target", "action", "done", "risk")}
        got = [
            f"{q} {picks[q].get('choice')} ({tv._num(picks[q].get('confidence'))})"
            for q in ("target", "action")
            if q in ans
        ]
        got += [
            f"{q} {tv._num(tv._d(ans.get(q)).get('noul'))}" for q in ("done", "risk") if q in ans
        ]
        line += f": HTTP {x.get('status')} in {x.get('elapsed_ms')} ms"
        line += f": {', '.join(got)}" if got else " (no answers)"
    if name == "dispatch_start" and not tv._find(evs, "dispatch_return"):
        return [line, "  NO dispatch_return: the outcome is unknown"]
    if name == "action":
        pre = snaps.get(str(tv._find(evs, "dispatch_start").get("snapshotId")))
        after = tv._find(evs, "snapshot", at="after_action").get("ax")
        return [line, *("  " + c for c in tv._text_changes(pre, after))]
    return [line]


def timeline(events: Sequence[Event]) -> str:
    """A per-step human timeline of one trace (metadata traces show what they hold)."""
    if not events:
        return "(no trace events)"
    snaps = tv._snapshots(events)
    out = [f"Run {events[0].get('runId')} ({events[0].get('mode')} trace, {len(events)} events)"]
    steps, current = tv._steps(events), 0
    for e in events:
        n: int = e["step"] if e["event"] not in tv._UNSTEPPED and type(e.get("step")) is int else 0
        if n and n != current:
            out.append(f"Step {n}")
            current = n
        out += [("  " if n else "") + line for line in _event_lines(e, steps.get(n, []), snaps)]
    problems = tv.integrity(events)
    out.append("Trace: complete" if not problems else "Trace: INCOMPLETE")
    return "\n".join([*out, *(f"  problem: {p}" for p in problems)])

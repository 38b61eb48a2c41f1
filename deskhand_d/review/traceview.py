"""Reading a Jev run trace after the fact: a per-step timeline and where the run first diverged.

What this owns: trace JSONL text into events (:func:`parse_line`, :func:`load_lines`), whether
a trace is whole (:func:`integrity`), the human :func:`timeline`, and :func:`analyze` with
:func:`render_analysis` / :func:`analysis_json`. Pure: no file I/O (``deskhandctl trace`` reads
the files). The recorded trees are the evidence; the model's claims and ``changed`` are not.

The first divergence is the first step (in step order) where one of these holds, checked in this
order: ``unknown_outcome`` (``dispatch_start`` without ``dispatch_return``); ``policy`` (the gate
did not say ``proceed``, or the loop stopped the run there); ``normalization`` (Jev answered a
target or action that was sent, yet the normalised decision has null); ``candidates`` (a goal
token no candidate carries is on an actionable element of that snapshot that was not sent);
``model`` (the chosen label shares no token with the goal, another candidate's does); then
``execution`` (a dispatch returned, but the after-action tree equals the preflight one, or
``changed`` is false).

Tokens: lower-cased words, numbers and the operators ``+ - * / × ÷ = %`` (not when touching
letters, as in ``Wi-Fi``); filler words (``the``, ``click``, ``description``, ``id`` …) are
dropped; operator and number words become symbols (``Add`` → ``+``, ``Equals``/``calculate`` →
``=``, ``Seven`` → ``7``). The model rule never blames a reset control (clear, delete, undo,
cancel, back …), since starting over can be right: such a step is judged by what the tree did.
It is also skipped when the step's after-action verification passed.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from deskhand_d import ax
from deskhand_d.jev.briefing import visible_texts
from deskhand_d.jev.task import plain
from deskhand_d.jev.types import ACTIONS

Event = dict[str, Any]
Kind = Literal["model", "candidates", "normalization", "policy", "execution", "unknown_outcome"]

SHOWN_CANDIDATES = 5
_UNSTEPPED = frozenset({"start", "task", "outcome", "failure", "finish"})
_STOPS = frozenset({"stop", "confirm", "escalate", "needs_planner"})
_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:\.\d+)?|(?<![^\W\d_])[-+*/×÷=%−](?![^\W\d_])")
_FILLER = (  # dropped from goals and labels before comparing them
    "a an the to of in on at for and or with into from by then it is be this that please click "
    "press tap select choose type enter use button description id help secondary actions value"
)
_NOISE = frozenset(_FILLER.split())
_NUMBER_WORDS = "zero one two three four five six seven eight nine"
_CANON = {
    **dict.fromkeys(("add", "plus", "sum"), "+"),
    **dict.fromkeys(("subtract", "minus", "−"), "-"),
    **dict.fromkeys(("multiply", "times", "×"), "*"),
    **dict.fromkeys(("divide", "÷"), "/"),
    **dict.fromkeys(("equals", "equal", "calculate", "compute"), "="),
    **dict(zip(_NUMBER_WORDS.split(), "0123456789", strict=True)),
    "percent": "%",
}
_RESET_WORDS = "clear allclear delete backspace undo cancel back reset escape close"
_RESET = frozenset(_RESET_WORDS.split())
_ACTIONABLE = ("button", "item", "link", "field", "text area", "checkbox", "tab", "row")


class Divergence(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    kind: Kind
    explanation: str


class Analysis(msgspec.Struct, kw_only=True):
    run_id: str | None
    mode: str | None
    status: str | None  # from finish (else outcome)
    reason: str | None
    steps: int | None  # actions completed
    complete: bool
    problems: list[str]
    unreturned_dispatches: list[int]
    first_divergence: Divergence | None
    summary: str


def parse_line(line: str, number: int) -> Event | str | None:
    """One line as an event, a problem text, or None for a blank line."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return f"line {number}: not JSON"
    if not isinstance(value, dict) or not isinstance(value.get("event"), str):
        return f"line {number}: not a trace event (an object with an event name)"
    return value


def load_lines(text: str) -> tuple[list[Event], list[str]]:
    """The events of a trace's text and the problems met on the way (unparsable lines)."""
    parsed = [parse_line(line, number) for number, line in enumerate(text.split("\n"), 1)]
    return [p for p in parsed if isinstance(p, dict)], [p for p in parsed if isinstance(p, str)]


def integrity(events: Sequence[Event]) -> list[str]:
    """What makes the trace incomplete: seq gaps, several runs, no finish, a failed writer."""
    if not events:
        return ["no trace events"]
    out: list[str] = []
    expect = 1
    for e in events:
        seq = e.get("seq")
        if type(seq) is not int:
            out.append(f"a {e['event']} event has no seq")
            continue
        if seq != expect:
            out.append(f"seq {seq} where {expect} was expected (events missing or out of order)")
        expect = seq + 1
    if len({str(e.get("runId")) for e in events}) > 1:
        out.append("events from more than one runId")
    if not _find(events, "finish"):
        out.append("no finish event: the run was cut short or the trace stopped being written")
    result = _result(events)
    if result.get("trace_incomplete") or result.get("traceIncomplete"):
        out.append("the outcome says trace_incomplete: some events could not be written")
    return out


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _find(events: Sequence[Event], name: str, **match: object) -> Event:
    """The first such event, or {} (so lookups chain without None checks)."""
    for e in events:
        if e.get("event") == name and all(e.get(k) == v for k, v in match.items()):
            return e
    return {}


def _result(events: Sequence[Event]) -> dict[str, Any]:
    return _d(_find(events, "outcome").get("result"))


def _tree(text: object) -> ax.Tree | None:
    return _parsed(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=16)  # the timeline and the checks read each snapshot more than once
def _parsed(text: str) -> ax.Tree | None:
    try:
        return ax.parse(text)
    except ax.AxParseError:
        return None


def _tokens(text: object) -> set[str]:
    return {_CANON.get(t, t) for t in _TOKEN.findall(str(text or "").lower()) if t not in _NOISE}


def _el(target: object) -> str:
    t = _d(target)
    label = plain(str(t.get("label", "")))[:60]
    return f'i{t.get("index")} {t.get("role") or "element"} "{label}"' if t else "no target"


def _num(value: object) -> str:
    return f"{value:.2f}" if type(value) in (float, int) else "–"


def _size(text: object) -> str:
    return f"{text.count(chr(10)) + 1} lines" if isinstance(text, str) else "not recorded"


def _steps(events: Sequence[Event]) -> dict[int, list[Event]]:
    out: dict[int, list[Event]] = {}
    for e in events:
        if e["event"] not in _UNSTEPPED and type(e.get("step")) is int:
            out.setdefault(e["step"], []).append(e)
    return out


def _snapshots(events: Sequence[Event]) -> dict[str, str]:
    """Snapshot id (as text, so any JSON value can be looked up) → tree text, in trace order."""
    return {str(e.get("snapshotId")): e["ax"] for e in events if isinstance(e.get("ax"), str)}


def _candidates(evs: Sequence[Event]) -> list[dict[str, Any]]:
    got = _d(_find(evs, "decision_input").get("input")).get("candidates")
    return [_d(c) for c in got] if isinstance(got, list) else []


def _quote(labels: list[str]) -> str:
    return " | ".join(f'"{x[:40]}"' for x in labels) or "nothing"


def _text_changes(before: object, after: object) -> list[str]:
    """The runs of ``text`` element labels that differ between two trees (in tree order)."""
    old, new = _tree(before), _tree(after)
    if old is None or new is None:
        return []
    b, a = ([plain(e.label) for e in t.elements if e.role == "text"] for t in (old, new))
    ops = difflib.SequenceMatcher(a=b, b=a, autojunk=False).get_opcodes()
    runs = [(b[i:j], a[k:m]) for op, i, j, k, m in ops if op != "equal"]
    return [f"texts {_quote(gone)} → {_quote(came)}" for gone, came in runs[:6]]


def _check(
    n: int, evs: list[Event], goal: str, snaps: dict[str, str], end: dict[str, Any]
) -> tuple[Kind, str] | None:
    start, ret = _find(evs, "dispatch_start"), _find(evs, "dispatch_return")
    out = _find(evs, "decision_output")
    target, decided = out.get("target") or start.get("target"), _find(evs, "decision")
    if start and not ret:
        return "unknown_outcome", (
            f"{start.get('method')} on {_el(target)} has a dispatch_start and no dispatch_return: "
            "whether it happened is unknown; observe again before acting."
        )
    if not start and n == end["last"] and end["unknown"]:
        return "unknown_outcome", "the run ended outcome_unknown during this step."
    gate = _d(_find(evs, "gate").get("gate"))
    verdict = gate.get("verdict", decided.get("status"))
    why = gate.get("reason", decided.get("reason"))
    if verdict is not None and verdict != "proceed":
        what = _el(target) if target else f"index {decided.get('index')}"
        return "policy", (
            f"the gate answered {verdict} ({why}) for {decided.get('action') or 'the action'} on "
            f"{what} (Jev's risk {_num(decided.get('risk'))}); nothing was dispatched at this step."
        )
    status, reason = end["status"], end["reason"]
    loop_stop = n == end["last"] and status in _STOPS and reason != "repeated_no_change"
    unusable = reason in ("invalid_decision", "unknown_target")
    if loop_stop and not unusable:
        how = "after the gate said proceed" if verdict else "with no gate verdict recorded"
        return "policy", f"the loop stopped the run with {status} ({reason}) {how}."
    cands, norm = _candidates(evs), _d(out.get("decision"))
    sent = {f"i{c.get('index')}" for c in cands}
    bodies = [_d(_d(e.get("exchange")).get("body")) for e in evs if e["event"] == "jev"]
    answers = next((_d(b["answers"]) for b in reversed(bodies) if "answers" in b), {})
    choice, action = (_d(answers.get(q)).get("choice") for q in ("target", "action"))
    lost = (
        [f"target {choice}"] if str(choice) in sent and norm.get("target_index", 0) is None else []
    )
    lost += [f"action {action}"] if action in ACTIONS and norm.get("action", 0) is None else []
    if lost:
        return "normalization", (
            f"Jev answered {' and '.join(lost)}, but decision_output's decision has null there: "
            "the answer was lost in normalisation."
        )
    want, sid = _tokens(goal), _find(evs, "decision_input").get("snapshotId")
    missing = want - set().union(*(_tokens(c.get("label")) for c in cands))
    tree = _tree(snaps.get(str(sid))) if cands and missing else None
    for el in tree.elements if tree else ():
        hit = _tokens(el.label) & missing
        actionable = not el.role or any(w in el.role for w in _ACTIONABLE)
        if hit and actionable and "disabled" not in el.states and f"i{el.index}" not in sent:
            return "candidates", (
                f"the goal's {', '.join(sorted(hit))} is on i{el.index} {el.role or 'menu entry'} "
                f'"{plain(el.label)[:60]}" in snapshot #{sid}, which was not among the '
                f"{len(cands)} candidates sent; no candidate sent carries it."
            )
    if loop_stop:  # invalid_decision / unknown_target with nothing lost in normalisation
        return "model", f"Jev's answer could not be used: the loop stopped with {reason}."
    chosen, index = _d(out.get("target")), _d(out.get("target")).get("index")
    passed = _find(evs, "verification", at="after_action").get("passed")
    if want and chosen and not passed and not _tokens(chosen.get("label")) & (want | _RESET):
        better = [c for c in cands if c.get("index") != index and _tokens(c.get("label")) & want]
        if better:
            return "model", (
                f"Jev chose {_el(chosen)} (confidence {_num(norm.get('confidence'))}), whose "
                f'label shares nothing with the goal "{goal}", while '
                f"{', '.join(_el(c) for c in better[:3])} did: the right element was offered."
            )
    act, pre = _find(evs, "action"), snaps.get(str(start.get("snapshotId")))
    after = _find(evs, "snapshot", at="after_action")
    same = pre is not None and after.get("ax") == pre
    if (ret or act) and (same or act.get("changed") is False):
        shows = f'; the texts still read "{visible_texts(t)}"' if (t := _tree(pre)) else ""
        ids = f"snapshot #{after.get('snapshotId')} = #{start.get('snapshotId')}, " if same else ""
        return "execution", (
            f"{start.get('method') or act.get('action')} on {_el(target)} returned after "
            f"{ret.get('elapsedMs', act.get('elapsedMs'))} ms, but the tree did not change "
            f"({ids}changed: false{shows}): check focus, whether the element takes this action "
            "and whether the app refreshes its tree."
        )
    return None


def analyze(events: Sequence[Event], problems: Sequence[str] = ()) -> Analysis:
    """Completeness and the first divergence; ``problems`` come from :func:`load_lines`."""
    found = [*problems, *integrity(events)]
    steps, result, finish = _steps(events), _result(events), _find(events, "finish")
    snaps = _snapshots(events)
    unreturned = [
        n
        for n, evs in sorted(steps.items())
        if _find(evs, "dispatch_start") and not _find(evs, "dispatch_return")
    ]
    status, reason = (_str(finish.get(k, result.get(k))) for k in ("status", "reason"))
    done = finish.get("step", result.get("steps"))
    done = done if type(done) is int else None
    end: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "unknown": result.get("outcome_unknown") or finish.get("reason") == "outcome_unknown",
        # where a loop-level ending belongs: the last step seen or the one after the completed
        # actions (a stop before that step's first event)
        "last": max([1, *steps, (done or 0) + 1]),
    }
    task, divergence = _find(events, "task"), None
    goal = str(task.get("goal") or "")
    for n in sorted({n for n in steps if n > 0} | {end["last"]}):
        hit = _check(n, steps.get(n, []), goal, snaps, end)
        if hit is not None:
            divergence = Divergence(step=n, kind=hit[0], explanation=hit[1])
            break
    first = events[0] if events else {}
    text = f"Run {str(first.get('runId', '?'))[:12]} ({first.get('mode', '?')} trace"
    text += f', {task.get("appName")}: "{goal}")' if goal else ")"
    ending = f"ended {end['status']} ({end['reason']}) after {done} action(s)"
    text += f" {ending if end['status'] else 'has no recorded ending'}; trace "
    text += "complete." if not found else f"incomplete ({len(found)} problem(s))."
    if divergence is None:
        text += " The trace shows no divergence."
        if first.get("mode") == "metadata":
            text += " (A metadata trace holds no labels, answers or trees to judge them by.)"
    else:
        text += f" First divergence: step {divergence.step}, {divergence.kind}: "
        text += divergence.explanation
    if (final := _tree(next(reversed(snaps.values()), None))) is not None:
        text += f' The last tree recorded shows "{visible_texts(final)}".'
    return Analysis(
        run_id=_str(first.get("runId")),
        mode=_str(first.get("mode")),
        status=end["status"],
        reason=end["reason"],
        steps=done,
        complete=not found,
        problems=found,
        unreturned_dispatches=unreturned,
        first_divergence=divergence,
        summary=text,
    )


def render_analysis(a: Analysis) -> str:
    d, lines = a.first_divergence, [f"run:        {a.run_id} ({a.mode})"]
    ending = f"{a.status} ({a.reason}) after {a.steps} action(s)" if a.status else "none recorded"
    lines.append(f"ending:     {ending}")
    lines.append(f"trace:      {'complete' if a.complete else 'INCOMPLETE'}")
    lines += [f"  problem: {p}" for p in a.problems]
    if a.unreturned_dispatches:
        lines.append(f"no dispatch_return (outcome unknown) at steps {a.unreturned_dispatches}")
    lines += [f"divergence: step {d.step}, {d.kind}", f"  {d.explanation}"] if d else []
    lines += [] if d else ["divergence: none found"]
    return "\n".join([*lines, f"summary:    {a.summary}"])


def analysis_json(a: Analysis) -> str:
    return msgspec.json.encode(a).decode()

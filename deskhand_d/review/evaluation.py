"""The live evaluation: the seed's cases through candidate selection and the real Jev API.

Each case is a tree, a goal and the element and action a person would pick. A case passes
when Jev, shown the selected candidates, picks exactly that element and action. Used by
``deskhandctl eval --live`` only (it costs money; never in CI).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from deskhand_d import ax
from deskhand_d import errors as E
from deskhand_d.jev.briefing import build_context
from deskhand_d.jev.client import JevClient, load_key, resolve_url

CASES_FILE = Path(__file__).with_name("cases.json")


class Case(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    app: str
    goal: str
    ax: str
    expected_index: int
    expected_action: str


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    return msgspec.json.decode(path.read_bytes(), type=list[Case])


async def run_cases(env: Mapping[str, str]) -> tuple[bool, list[str]]:
    """Run every case once (no retries); returns (all passed, report lines)."""
    env_file = env.get("DESKHAND_ENV_FILE") or env.get("JEV_CUA_ENV_FILE") or None
    key = load_key(env, env_file)
    if not key:
        return False, ["no TypeSafe key: set TYPESAFE_API_KEY or DESKHAND_ENV_FILE"]
    client = JevClient(key=key, url=resolve_url(env), max_retries=0)
    lines: list[str] = []
    passed = 0
    cases = load_cases()
    try:
        for case in cases:
            tree = ax.parse(case.ax)
            selection = ax.select_candidates(tree, case.goal)
            ranked = [c.index for c in selection.candidates]
            try:
                d = await client.decide(
                    goal=case.goal,
                    app=case.app,
                    candidates=selection.candidates,
                    context=build_context(tree),
                    recent_actions=[],
                    constraints="",
                )
            except E.DeskhandError as exc:
                lines.append(f"FAIL {case.name}: {exc.code} ({exc.message})")
                continue
            ok = d.target_index == case.expected_index and d.action == case.expected_action
            passed += ok
            lines.append(
                f"{'PASS' if ok else 'FAIL'} {case.name}: picked i{d.target_index} "
                f"{d.action} (confidence {d.confidence}), expected i{case.expected_index} "
                f"{case.expected_action}; candidates {ranked[:5]}, {d.latency_ms} ms"
            )
    finally:
        await client.aclose()
    lines.append(f"{passed}/{len(cases)} cases passed")
    return passed == len(cases), lines

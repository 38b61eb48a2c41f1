"""Consent regressions, table-driven: each scenario is a script of steps against a real daemon
on the simulated desktop, with identities staged in a catalogue the steps rewrite.

A step is a tuple:

* ``("observe", app, answers, expect, asked)``: ``get_app_state`` in the session ``agent``;
  ``answers`` are given to Deskhand's consent questions in order; ``expect`` is ``"ok"`` or an
  error code; ``asked`` is how many consent questions this step must have raised.
* ``("deaf", app, expect)``: the same from a client that cannot answer questions.
* ``("turn_end",)``, ``("restart",)``: end the task; restart the daemon (grants.json stays).
* ``("change", app, fields)``: rewrite the app's catalogue entry (re-sign, unsign, ...).
* ``("revoke", app)``, ``("restore", app)``: the person's grants commands.
* ``("saved", n_active, n_revoked)``: what grants.json holds.
* ``("choices", app, choices)``: the choices the next question about ``app`` offers (denied).
"""

from __future__ import annotations

from typing import Any

import pytest
from dhtest.consent_rig import Rig

Step = tuple[Any, ...]
RESIGNED = 'anchor apple generic and identifier "com.apple.calculator" and certificate leaf[subject.OU] = EVIL123456'

SCENARIOS: dict[str, list[Step]] = {
    "signed app: a saved grant is reused across tasks and daemon restarts": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("saved", 1, 0),
        ("observe", "Calculator", [], "ok", 0),
        ("turn_end",),
        ("observe", "Calculator", [], "ok", 0),
        ("restart",),
        ("observe", "com.apple.calculator", [], "ok", 0),
    ],
    "a re-signed impostor at the same path is refused and asked about again": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("change", "Calculator", {"requirement": RESIGNED, "signer": "EVIL123456"}),
        ("observe", "Calculator", ["deny"], "consent_denied", 1),
        ("saved", 1, 0),  # the genuine app's grant is untouched, no grant for the impostor
        ("turn_end",),
        ("observe", "Calculator", ["once"], "ok", 1),
    ],
    "a signed update that keeps the requirement keeps its grant": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("change", "Calculator", {"names": ["Calculator", "com.apple.calculator", "Calc"]}),
        ("observe", "Calculator", [], "ok", 0),
    ],
    "a copy at another path is not covered by the original's grant": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("observe", "Calculator Copy", ["deny"], "consent_denied", 1),
        ("saved", 1, 0),
    ],
    "an unsigned app gets task-only access that expires with the task": [
        ("choices", "TextEdit", ["once", "deny"]),
        ("turn_end",),
        ("observe", "TextEdit", ["once"], "ok", 1),
        ("observe", "TextEdit", [], "ok", 0),
        ("saved", 0, 0),
        ("turn_end",),
        ("observe", "TextEdit", ["once"], "ok", 1),
        ("restart",),
        ("observe", "TextEdit", ["once"], "ok", 1),
    ],
    "a signed app is offered always": [
        ("choices", "Calculator", ["once", "always", "deny"]),
    ],
    "a refusal is not asked again within the task": [
        ("observe", "Calculator", ["deny"], "consent_denied", 1),
        ("observe", "Calculator", [], "consent_denied", 0),
        ("observe", "com.apple.calculator", [], "consent_denied", 0),
        ("turn_end",),
        ("observe", "Calculator", ["once"], "ok", 1),
    ],
    "an explicitly restored saved grant beats an earlier refusal": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("revoke", "Calculator"),
        ("saved", 0, 1),
        ("observe", "Calculator", ["deny"], "consent_denied", 1),
        ("observe", "Calculator", [], "consent_denied", 0),
        ("restore", "Calculator"),
        ("saved", 1, 0),
        ("observe", "Calculator", [], "ok", 0),
    ],
    "nobody to ask: denied, and nothing is remembered": [
        ("deaf", "Calculator", "consent_denied"),
        ("observe", "Calculator", ["once"], "ok", 1),
        ("saved", 0, 0),
    ],
    "a task grant lapses when a revocation restarts the backend": [
        ("observe", "Calculator", ["always"], "ok", 1),
        ("observe", "TextEdit", ["once"], "ok", 1),
        ("revoke", "Calculator"),
        ("observe", "TextEdit", ["once"], "ok", 1),
    ],
    "an app that cannot be identified is refused before the backend": [
        ("change", "Calendar", {"names": ["Something Else"]}),
        ("observe", "Calendar", [], "app_unidentified", 0),
    ],
}


def run(rig: Rig, steps: list[Step]) -> None:
    agent = rig.person()
    for i, step in enumerate(steps):
        where = f"step {i}: {step}"
        kind = step[0]
        if kind == "observe":
            _, app, answers, expect, asked = step
            before = len(agent.questions)
            reply = agent.request("get_app_state", answers, app=app)
            got = "ok" if reply["type"] == "result" else reply["error"]["code"]
            assert got == expect, (where, reply)
            assert len(agent.questions) - before == asked, where
            if expect == "consent_denied":
                assert reply["error"]["data"]["delivery"] == "refused", where
        elif kind == "deaf":
            _, app, expect = step
            reply = rig.client("deaf", answers=False).call("get_app_state", app=app)
            assert reply["error"]["code"] == expect, (where, reply)
            assert reply["error"]["data"]["reason"] == "no_one_to_ask", where
        elif kind == "choices":
            _, app, choices = step
            rid = agent.send("get_app_state", app=app)
            question = agent.next_question()
            assert question["choices"] == choices, where
            assert question["question"] == "app_consent" and question["app"] == app, where
            assert rig.entry(app)["path"] in question["text"], where
            agent.answer(question, "deny")
            assert agent.wait_reply(rid)["error"]["code"] == "consent_denied", where
        elif kind == "turn_end":
            assert agent.request("turn_end")["type"] == "result", where
        elif kind == "restart":
            rig.restart()
            agent = rig.person()
        elif kind == "change":
            rig.change(step[1], **step[2])
        elif kind in ("revoke", "restore"):
            reply = rig.admin().call(f"grants_{kind}", app=step[1])
            assert reply["type"] == "result", (where, reply)
            assert reply["result"]["grants"], where
        elif kind == "saved":
            saved = rig.saved()
            active = [g for g in saved if g["revoked_at"] is None]
            assert (len(active), len(saved) - len(active)) == (step[1], step[2]), (where, saved)
        else:
            raise AssertionError(f"unknown step {step}")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(rig_factory: Any, name: str) -> None:
    run(rig_factory(), SCENARIOS[name])

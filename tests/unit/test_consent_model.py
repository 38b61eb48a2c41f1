"""The pure consent decision: saved grants, task grants, refusals and process instances."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from deskhand_d.consent import identity
from deskhand_d.consent.grants import SavedGrant
from deskhand_d.consent.identity import AppIdentity
from deskhand_d.consent.model import (
    Allow,
    Ask,
    Choice,
    Decision,
    Deny,
    TaskConsent,
    TaskGrant,
    after_observation,
    choices_for,
    decide,
    saved_grant_for,
)

REQUIREMENT = 'identifier "x" and anchor apple'
CALC = identity.signed(
    "Calculator", "/Applications/Calc.app/Contents/MacOS/Calc", REQUIREMENT, signer="Apple"
)
# The same signed bundle copied elsewhere: a different app (the key covers the path).
CALC_COPY = identity.signed(
    "Calculator", "/Users/me/Downloads/Calc.app/Contents/MacOS/Calc", REQUIREMENT, signer="Apple"
)
# Another identity whose display name differs from CALC's only by case and spaces.
CALC_SHOUTED = identity.signed(
    "  CALCULATOR ", "/opt/other/Calc.app/Contents/MacOS/Calc", REQUIREMENT, signer="Someone"
)
LS = identity.package("ls", "/usr/bin/ls", "coreutils")
TOOL = identity.content("Tool", "/home/me/bin/tool", "ab" * 32, why="unsigned")

VERIFIABLE_CHOICES: tuple[Choice, ...] = ("once", "always", "deny")
CONTENT_CHOICES: tuple[Choice, ...] = ("once", "deny")


def saved(
    ident: AppIdentity, *, revoked: bool = False, path: str | None = None, key: str | None = None
) -> SavedGrant:
    """A saved grant as grants.json would hold it (a content identity's one is forged)."""
    return SavedGrant(
        app=ident.app,
        path=ident.path if path is None else path,
        kind="package" if ident.kind == "package" else "signed",
        key=ident.key if key is None else key,
        signer=ident.signer,
        detail=ident.detail,
        granted_at="2024-01-01T00:00:00Z",
        revoked_at="2024-01-02T00:00:00Z" if revoked else None,
    )


@dataclass(frozen=True)
class Case:
    """One decision: what the task remembers, what is saved, and what is being dispatched."""

    ident: AppIdentity
    expected: Decision
    saved: tuple[SavedGrant, ...] = ()
    records: tuple[tuple[AppIdentity, Choice, int], ...] = ()  # (identity, choice, generation)
    binds: tuple[tuple[AppIdentity, int], ...] = ()  # (identity, pid)
    generation: int = 1
    instance: int | None = None


DECIDE_CASES = [
    # -- saved grants ----------------------------------------------------------------------
    pytest.param(Case(CALC, Allow("saved"), saved=(saved(CALC),)), id="saved-active-signed"),
    pytest.param(Case(LS, Allow("saved"), saved=(saved(LS),)), id="saved-active-package"),
    pytest.param(
        Case(CALC, Allow("saved"), saved=(saved(LS), saved(CALC_COPY), saved(CALC))),
        id="saved-found-among-others",
    ),
    pytest.param(
        Case(CALC, Ask(VERIFIABLE_CHOICES, restarted=False), saved=(saved(CALC, revoked=True),)),
        id="saved-revoked-asks",
    ),
    pytest.param(
        Case(
            CALC,
            Ask(VERIFIABLE_CHOICES, restarted=False),
            saved=(saved(CALC, path=CALC_COPY.path),),
        ),
        id="saved-same-key-other-path-asks",
    ),
    pytest.param(
        Case(CALC_COPY, Ask(VERIFIABLE_CHOICES, restarted=False), saved=(saved(CALC),)),
        id="saved-copy-at-other-path-asks",
    ),
    pytest.param(
        Case(TOOL, Ask(CONTENT_CHOICES, restarted=False), saved=(saved(TOOL),)),
        id="saved-never-matches-content",
    ),
    pytest.param(
        Case(
            CALC,
            Allow("saved"),
            saved=(saved(CALC),),
            records=((CALC, "once", 1),),
            binds=((CALC, 10),),
            instance=11,
        ),
        id="saved-beats-task-grant-of-another-instance",
    ),
    # -- nothing known: ask ----------------------------------------------------------------
    pytest.param(Case(CALC, Ask(VERIFIABLE_CHOICES, restarted=False)), id="ask-signed"),
    pytest.param(Case(LS, Ask(VERIFIABLE_CHOICES, restarted=False)), id="ask-package"),
    pytest.param(Case(TOOL, Ask(CONTENT_CHOICES, restarted=False)), id="ask-content-no-always"),
    # -- refusals --------------------------------------------------------------------------
    pytest.param(
        Case(CALC, Deny("refused_this_task"), records=((CALC, "deny", 1),)),
        id="refused-by-key",
    ),
    pytest.param(
        Case(TOOL, Deny("refused_this_task"), records=((TOOL, "deny", 1),)),
        id="refused-content-by-key",
    ),
    pytest.param(
        Case(CALC_SHOUTED, Deny("refused_this_task"), records=((CALC, "deny", 1),)),
        id="refused-by-name-casefolded-trimmed",
    ),
    pytest.param(
        Case(CALC, Deny("refused_this_task"), records=((CALC_SHOUTED, "deny", 1),)),
        id="refused-by-name-recorded-shouted",
    ),
    pytest.param(
        Case(CALC, Deny("refused_this_task"), records=((CALC, "deny", 1),), generation=2),
        id="refusal-survives-generation-change",
    ),
    pytest.param(
        Case(LS, Ask(VERIFIABLE_CHOICES, restarted=False), records=((CALC, "deny", 1),)),
        id="refusal-of-another-app-irrelevant",
    ),
    pytest.param(
        Case(CALC, Allow("saved"), saved=(saved(CALC),), records=((CALC, "deny", 1),)),
        id="saved-beats-earlier-refusal",
    ),
    pytest.param(
        Case(
            CALC,
            Deny("refused_this_task"),
            saved=(saved(CALC, revoked=True),),
            records=((CALC, "deny", 1),),
        ),
        id="revoked-saved-does-not-beat-refusal",
    ),
    pytest.param(
        Case(CALC, Deny("refused_this_task"), records=((CALC, "once", 1), (CALC, "deny", 1))),
        id="deny-after-once-denies",
    ),
    # -- task grants -----------------------------------------------------------------------
    pytest.param(
        Case(CALC, Allow("task"), records=((CALC, "once", 1),)), id="task-same-generation"
    ),
    pytest.param(Case(TOOL, Allow("task"), records=((TOOL, "once", 1),)), id="task-content"),
    pytest.param(
        Case(CALC, Allow("task"), records=((CALC, "always", 1),)),
        id="task-from-always-answer",
    ),
    pytest.param(
        Case(
            CALC,
            Ask(VERIFIABLE_CHOICES, restarted=False),
            records=((CALC, "once", 1),),
            generation=2,
        ),
        id="task-other-generation-asks",
    ),
    pytest.param(
        Case(
            TOOL, Ask(CONTENT_CHOICES, restarted=False), records=((TOOL, "once", 1),), generation=2
        ),
        id="task-content-other-generation-asks",
    ),
    pytest.param(
        Case(CALC_COPY, Ask(VERIFIABLE_CHOICES, restarted=False), records=((CALC, "once", 1),)),
        id="task-grant-of-copy-does-not-cover",
    ),
    pytest.param(
        Case(CALC, Allow("task"), records=((CALC, "once", 1),), binds=((CALC, 10),), instance=10),
        id="task-bound-same-instance",
    ),
    pytest.param(
        Case(
            CALC,
            Ask(VERIFIABLE_CHOICES, restarted=True),
            records=((CALC, "once", 1),),
            binds=((CALC, 10),),
            instance=11,
        ),
        id="task-bound-other-instance-restarted",
    ),
    pytest.param(
        Case(
            TOOL,
            Ask(CONTENT_CHOICES, restarted=True),
            records=((TOOL, "once", 1),),
            binds=((TOOL, 10),),
            instance=11,
        ),
        id="task-content-bound-other-instance-restarted",
    ),
    pytest.param(
        Case(CALC, Allow("task"), records=((CALC, "once", 1),), binds=((CALC, 10),), instance=None),
        id="task-bound-instance-unknown",
    ),
    pytest.param(
        Case(CALC, Allow("task"), records=((CALC, "once", 1),), instance=11),
        id="task-unbound-any-instance",
    ),
    pytest.param(
        Case(
            CALC,
            Ask(VERIFIABLE_CHOICES, restarted=False),
            records=((CALC, "once", 1),),
            binds=((CALC, 10),),
            generation=2,
            instance=11,
        ),
        id="task-other-generation-not-restarted",
    ),
    pytest.param(
        Case(
            CALC,
            Allow("task"),
            records=((CALC, "once", 1), (CALC, "once", 2)),
            binds=((CALC, 10),),
            generation=2,
            instance=10,
        ),
        id="task-regranted-under-new-generation",
    ),
]


@pytest.mark.parametrize("case", DECIDE_CASES)
def test_decide(case: Case) -> None:
    """Saved grant, then refusal, then task grant under this generation and instance, else ask."""
    task = TaskConsent()
    for ident, choice, generation in case.records:
        task.record(ident, choice, generation=generation)
    for ident, pid in case.binds:
        task.bind(ident, pid)
    decision = decide(
        task, case.ident, case.saved, generation=case.generation, instance=case.instance
    )
    assert decision == case.expected


def test_decide_accepts_a_one_shot_iterable() -> None:
    """``saved`` may be a generator (consumed once)."""
    grants = [saved(LS), saved(CALC)]
    assert decide(TaskConsent(), CALC, iter(grants), generation=1, instance=None) == Allow("saved")


@pytest.mark.parametrize(
    ("ident", "grants", "expected_index"),
    [
        pytest.param(CALC, [saved(CALC)], 0, id="exact"),
        pytest.param(CALC, [saved(LS), saved(CALC)], 1, id="second"),
        pytest.param(CALC, [saved(CALC, revoked=True), saved(CALC)], 1, id="skips-revoked"),
        pytest.param(CALC, [saved(CALC, revoked=True)], None, id="only-revoked"),
        pytest.param(CALC, [saved(CALC, path=CALC_COPY.path)], None, id="same-key-other-path"),
        pytest.param(CALC, [saved(CALC_COPY)], None, id="copy"),
        pytest.param(CALC, [], None, id="none-saved"),
        pytest.param(TOOL, [saved(TOOL)], None, id="content-forged-grant"),
        pytest.param(LS, [saved(LS)], 0, id="package"),
    ],
)
def test_saved_grant_for(
    ident: AppIdentity, grants: list[SavedGrant], expected_index: int | None
) -> None:
    """Only an active grant with this identity's key and path covers it; content never."""
    expected = None if expected_index is None else grants[expected_index]
    assert saved_grant_for(ident, grants) is expected


@pytest.mark.parametrize(
    ("ident", "expected"),
    [
        pytest.param(CALC, VERIFIABLE_CHOICES, id="signed"),
        pytest.param(LS, VERIFIABLE_CHOICES, id="package"),
        pytest.param(TOOL, CONTENT_CHOICES, id="content"),
    ],
)
def test_choices_for(ident: AppIdentity, expected: tuple[Choice, ...]) -> None:
    """ "always" is offered only for verifiable identities."""
    assert choices_for(ident) == expected
    assert ident.verifiable is ("always" in expected)


# -- after_observation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("granted", "bound", "pid", "result", "instance_after"),
    [
        pytest.param(True, None, 10, True, 10, id="unbound-binds"),
        pytest.param(True, 10, 11, False, 10, id="bound-other-pid"),
        pytest.param(True, 10, 10, True, 10, id="bound-same-pid"),
        pytest.param(True, None, None, True, None, id="unbound-pid-unknown"),
        pytest.param(True, 10, None, True, 10, id="bound-pid-unknown"),
        pytest.param(False, None, 10, True, None, id="no-grant"),
        pytest.param(False, None, None, True, None, id="no-grant-pid-unknown"),
    ],
)
def test_after_observation(
    granted: bool, bound: int | None, pid: int | None, result: bool, instance_after: int | None
) -> None:
    """Binds a fresh grant; False only when it is bound to another process."""
    task = TaskConsent()
    if granted:
        task.record(CALC, "once", generation=3)
        if bound is not None:
            task.bind(CALC, bound)
    assert after_observation(task, CALC, pid) is result
    grant = task.grants.get(CALC.key)
    if granted:
        assert grant == TaskGrant(generation=3, instance=instance_after)
    else:
        assert grant is None
        assert task.grants == {}


def test_observation_then_restart_asks_again() -> None:
    """Once bound by an observation, a new pid makes decide ask with restarted=True."""
    task = TaskConsent()
    task.record(TOOL, "once", generation=1)
    assert after_observation(task, TOOL, 10) is True
    assert decide(task, TOOL, [], generation=1, instance=10) == Allow("task")
    assert decide(task, TOOL, [], generation=1, instance=11) == Ask(CONTENT_CHOICES, True)
    assert after_observation(task, TOOL, 11) is False


def test_observation_binds_only_its_identity() -> None:
    """Binding one identity's grant leaves another identity's grant unbound."""
    task = TaskConsent()
    task.record(CALC, "once", generation=1)
    task.record(LS, "once", generation=1)
    assert after_observation(task, CALC, 10) is True
    assert task.grants[CALC.key].instance == 10
    assert task.grants[LS.key].instance is None


# -- TaskConsent ----------------------------------------------------------------------------


def test_reset_clears_everything() -> None:
    """After reset nothing is remembered: a refused and a granted app are both asked again."""
    task = TaskConsent()
    task.record(CALC, "once", generation=1)
    task.bind(CALC, 10)
    task.record(LS, "deny", generation=1)
    assert task.grants and task.refused_keys and task.refused_apps
    task.reset()
    assert task.grants == {}
    assert task.refused_keys == set()
    assert task.refused_apps == set()
    assert decide(task, CALC, [], generation=1, instance=10) == Ask(VERIFIABLE_CHOICES, False)
    assert decide(task, LS, [], generation=1, instance=None) == Ask(VERIFIABLE_CHOICES, False)


def test_deny_drops_the_task_grant() -> None:
    """record("deny") forgets an earlier "once" and remembers the key and trimmed name."""
    task = TaskConsent()
    task.record(CALC_SHOUTED, "once", generation=1)
    task.bind(CALC_SHOUTED, 10)
    task.record(CALC_SHOUTED, "deny", generation=1)
    assert CALC_SHOUTED.key not in task.grants
    assert task.refused_keys == {CALC_SHOUTED.key}
    assert task.refused_apps == {"calculator"}
    assert decide(task, CALC_SHOUTED, [], generation=1, instance=10) == Deny("refused_this_task")


def test_deny_leaves_other_grants() -> None:
    """Refusing one app keeps the task grant of another."""
    task = TaskConsent()
    task.record(LS, "once", generation=1)
    task.record(CALC, "deny", generation=1)
    assert set(task.grants) == {LS.key}
    assert decide(task, LS, [], generation=1, instance=None) == Allow("task")


def test_regrant_unbinds() -> None:
    """A fresh "once" replaces the old grant: new generation, not yet bound to a pid."""
    task = TaskConsent()
    task.record(CALC, "once", generation=1)
    task.bind(CALC, 10)
    task.record(CALC, "once", generation=2)
    assert task.grants[CALC.key] == TaskGrant(generation=2, instance=None)


def test_bind_without_grant_or_pid_is_a_no_op() -> None:
    """bind() neither creates a grant nor unbinds one with pid None."""
    task = TaskConsent()
    task.bind(CALC, 10)
    assert task.grants == {}
    task.record(CALC, "once", generation=1)
    task.bind(CALC, 10)
    task.bind(CALC, None)
    assert task.grants[CALC.key].instance == 10

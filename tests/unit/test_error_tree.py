"""The error tree is designed, not grown: a handful of branches that say whose fault a failure
is, every code stable and snake_case, and every error about an action stating its delivery."""

from __future__ import annotations

import inspect
import re

from deskhand_d import errors as E

BRANCHES = {
    E.ClientError,
    E.Unavailable,
    E.SettingsError,
    E.DispatchError,
    E.Refusal,
    E.BackendFault,
    E.JevError,
    E.RunStopped,
}
# whose delivery depends on the moment, so the raiser always gives it
RAISER_DECIDES = {E.SessionStopped, E.StateChanged, E.InputTargetChanged, E.AppExited}


def _all() -> list[type[E.DeskhandError]]:
    return [c for c in vars(E).values() if inspect.isclass(c) and issubclass(c, E.DeskhandError)]


def test_the_base_has_only_the_branches_and_internal_error_below_it() -> None:
    direct = {c for c in _all() if c.__bases__ == (E.DeskhandError,)}
    assert direct == {
        E.ClientError,
        E.Unavailable,
        E.DispatchError,
        E.JevError,
        E.RunStopped,
        E.InternalError,
    }


def test_codes_are_snake_case_and_only_internal_error_says_internal() -> None:
    for cls in _all():
        if cls in BRANCHES or cls is E.DeskhandError:
            continue
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", cls.code), cls
        assert (cls.code == "internal") == (cls is E.InternalError), cls


def test_every_error_about_an_action_states_a_delivery() -> None:
    for cls in _all():
        if not issubclass(cls, E.DispatchError) or cls in BRANCHES:
            continue
        if cls in RAISER_DECIDES:
            assert cls.default_delivery is None
            assert cls("x", delivery="unknown").reply_data()["delivery"] == "unknown"
            continue
        assert cls.default_delivery is not None, cls
        assert cls("x").reply_data()["delivery"] == cls.default_delivery
    for cls in _all():
        if not issubclass(cls, E.DispatchError) and cls is not E.DeskhandError:
            assert cls.default_delivery is None, cls  # no delivery claimed where none applies


def test_refusals_sent_nothing_and_a_count_travels_with_a_partial() -> None:
    assert all(c.default_delivery == "refused" for c in _all() if issubclass(c, E.Refusal))
    exc = E.InputTargetChanged(
        "stopped", delivery="partial", delivered=E.Count(93, 240, "characters")
    )
    assert exc.reply_data() == {
        "delivery": "partial",
        "delivered": {"done": 93, "total": 240, "unit": "characters"},
    }

"""The Linux backend's own notes on a call that Sky's texts have no words for.

What this owns: :class:`Withheld`, raised anywhere in the backend when a call ends on purpose
for a reason the daemon must tell apart, and how it becomes a tool result: a sentence for the
reader plus a ``deskhand/delivery`` note (:data:`~deskhand_d.surface.DELIVERY_META`)
that states what reached the app and why it stopped. The reasons:

* ``app_exited``: the app's process ended while its window was read or input was sent
  (``exit``: how it ended, ``signal 11 (SIGSEGV)`` or ``status 1``, when known);
* ``not_accessible``: the app runs but gives the accessibility bus nothing to read (``hint``
  says what would change that: ``restart``, or ``restart_chromium`` for a Chromium-family app
  started without its accessibility switch);
* ``focus_elsewhere``: keys would not reach the app's focused element;
* ``modal_dialog``: the element lies behind a modal dialog of the app (``dialog``: its name);
* ``no_effect``: the action was delivered and reading the element back shows it unchanged
  (``what``: ``value``, ``text`` or ``selection``).

Every note but ``no_effect`` (delivered, state ``dispatched``) and an exit during input
(``unknown``) is given before anything was sent: state ``refused``.

Also :data:`EFFECT_META`, the note on a successful action that says whether reading the element
back showed the change (``changed``) or could not tell (``unreadable``).
"""

from __future__ import annotations

import os
import signal
from typing import Any, Final, Literal

from deskhand_d import surface

from ..core.tools import Outcome

EFFECT_META: Final = surface.EFFECT_META
Reason = Literal["app_exited", "not_accessible", "focus_elsewhere", "modal_dialog", "no_effect"]


class Withheld(Exception):
    """A call that ends on purpose: ``text`` for the reader, the note for the daemon."""

    def __init__(
        self,
        text: str,
        *,
        reason: Reason,
        state: Literal["refused", "dispatched", "unknown"] = "refused",
        **fields: Any,
    ) -> None:
        super().__init__(text)
        self.text = text
        self.reason = reason
        self.state = state
        self.fields = fields

    def outcome(self) -> Outcome:
        out = Outcome([{"type": "text", "text": self.text}], is_error=True)
        note: dict[str, Any] = {"state": self.state, "reason": self.reason, **self.fields}
        out.meta[surface.DELIVERY_META] = note
        return out


def describe_exit(status: int | None) -> str:
    """``signal 11 (SIGSEGV)`` or ``status 1`` from a wait status; ``""`` when unknown."""
    if status is None:
        return ""
    if status < 0:  # subprocess's convention: minus the signal number
        return _signal_words(-status)
    if os.WIFSIGNALED(status):
        return _signal_words(os.WTERMSIG(status))
    if os.WIFEXITED(status):
        return f"status {os.WEXITSTATUS(status)}"
    return ""


def _signal_words(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"

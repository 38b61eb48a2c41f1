"""The one error tree for Deskhand.

Every refusal the daemon can give a client is a :class:`DeskhandError` with a stable snake_case
``code`` (clients switch on it) and a message that tells the person or the calling agent what to
do next. Pure modules return outcomes as values; these exceptions belong to the shells and are
turned into ``error`` replies at the RPC boundary (``reply_data``). The tree says whose fault a
failure is, the way h11 and wsproto split local from remote protocol errors::

    DeskhandError
    ├── ClientError        the request is at fault (bad, out of order, too large): fix it
    ├── Unavailable        the daemon cannot serve it now, or its setup forbids it
    │   └── SettingsError  config, apps.json, grants.json
    ├── DispatchError      about an action on the desktop; always states its delivery
    │   ├── Refusal        refused before anything was sent (gates, consent, stateIds, ...)
    │   ├── BackendFault   the backend's side, a remote fault (unreachable, unknown, refused)
    │   └── RequestCancelled
    ├── JevError           the Jev API's side, a remote fault
    ├── RunStopped         a Jev run at one of its own limits
    └── InternalError      a bug in Deskhand (details in the log only)

Foreign exceptions are turned into this tree once, where they enter: the backend client maps
pipe, process and protocol failures to :class:`BackendFault` subclasses
(``backends/mcpclient/connection.py``), the Jev client maps httpx failures to
:class:`JevError` subclasses (``jev/client.py``), and the connection turns anything else into
:class:`InternalError` (``rpc/connection.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Delivery = Literal["refused", "dispatched", "partial", "unknown"]
"""What reached the desktop, the one fact every action reply states:

* ``refused``: nothing was sent (a gate, a stop before the call, an input check that failed
  before the first event);
* ``dispatched``: the backend took the call and answered;
* ``partial``: the backend sent some of the input and then stopped on purpose
  (:class:`Count` says how much);
* ``unknown``: the call was sent and no answer says what happened (a crash, a stop or a
  disconnect in flight). Never retried.
"""


@dataclass(frozen=True, slots=True)
class Count:
    """How much of an action's input was delivered before it stopped: ``done`` of ``total``
    ``unit`` (characters, keys, pointer events)."""

    done: int
    total: int
    unit: str

    def describe(self) -> str:
        return f"{self.done} of {self.total} {self.unit}"

    def to_data(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "unit": self.unit}


class DeskhandError(Exception):
    """Base of every error a client may see. Raised by shells, never by pure code.

    ``delivery`` is typed and set in one of three ways: by the class (an error that can only
    mean one thing, such as :class:`OutcomeUnknown`), by the raiser (``delivery=``), or by the
    layer that knows whether the backend was reached (:meth:`assume`). ``None`` means the
    error has nothing to do with the desktop (a bad request, a grants-file problem). It is
    added to the reply's ``data`` only at the RPC boundary (:meth:`reply_data`).
    """

    code: ClassVar[str] = "internal"
    default_delivery: ClassVar[Delivery | None] = None

    def __init__(
        self,
        message: str,
        *,
        data: dict[str, Any] | None = None,
        delivery: Delivery | None = None,
        delivered: Count | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = dict(data or {})
        self.delivery: Delivery | None = delivery or self.default_delivery
        self.delivered = delivered

    def assume(self, delivery: Delivery) -> None:
        """Set the delivery unless the raiser already knew better."""
        if self.delivery is None:
            self.delivery = delivery

    def reply_data(self) -> dict[str, Any]:
        """``data`` as the client receives it, with the delivery facts added."""
        if self.delivery is None:
            return self.data
        out = {**self.data, "delivery": self.delivery}
        if self.delivered is not None:
            out["delivered"] = self.delivered.to_data()
        return out


class ClientError(DeskhandError):
    """The request itself is at fault; nothing ran. Fix it and send it again."""


class BadRequest(ClientError):
    """The client sent something undecodable, of the wrong shape, or out of order.

    The connection stays usable; fix the request and send it again.
    """

    code = "bad_request"


class RequestTooLarge(BadRequest):
    """The message is larger than its op allows; it was refused without being decoded.

    ``data`` says ``op`` (null when none could be read), ``limit_bytes`` and ``size_bytes``.
    """

    code = "request_too_large"


class HelloRequired(BadRequest):
    """An op other than ``hello`` arrived before the ``hello`` exchange."""

    code = "hello_required"


class CannotAnswerQuestions(ClientError):
    """``questions_watch`` from a connection whose hello did not declare
    ``can_answer_questions``: only a client that can put questions to a person may be a
    console."""

    code = "cannot_answer_questions"


class NotForAgents(ClientError):
    """A step only the person takes, asked by a connection whose hello said it is an agent's
    (``client.kind`` ``agent`` or ``pi``): ``unlock``, ``apps_add``, ``grants_restore``,
    ``questions_watch``, or an ``answer`` to a question asked of another connection. Nothing
    was changed; ``data.command`` is the ``deskhandctl`` command the person runs in their own
    terminal instead (it asks them to confirm there)."""

    code = "not_for_agents"


class ProtocolMismatch(ClientError):
    """The client speaks a protocol version this daemon does not."""

    code = "protocol_mismatch"


class TooManyRequests(ClientError):
    """The connection already has the maximum number of requests outstanding."""

    code = "too_many_requests"


class GrantNotFound(ClientError):
    """``grants revoke`` / ``grants restore`` named an app with no matching saved grant."""

    code = "grant_not_found"


class ModeBusy(ClientError):
    """The mode cannot change while this session runs a task."""

    code = "mode_busy"


class JevModeRequired(ClientError):
    """``run`` was asked of a session in native mode; nothing was sent to Jev."""

    code = "jev_mode_required"


class Unavailable(DeskhandError):
    """The daemon cannot serve this now, or is set up so that it cannot; the message says what
    to fix or when to try again."""


class ShuttingDown(Unavailable):
    """The daemon is stopping and takes no new work."""

    code = "shutting_down"


class TooManyClients(Unavailable):
    """Every connection slot is taken: this connection sits in the spare slot that is kept for
    the emergency stop, which serves ``hello`` and ``stop`` only and then closes."""

    code = "too_many_clients"


class MissingJevKey(Unavailable):
    """Jev mode needs a TypeSafe API key (``TYPESAFE_API_KEY`` or the owner-only env file)."""

    code = "missing_jev_key"


class SettingsError(Unavailable):
    """A settings file (config, apps.json, grants.json) is unsafe, corrupt or cannot be written;
    nothing was changed."""


class ConfigError(SettingsError):
    """The configuration (file or environment) is invalid. The daemon exits with 78."""

    code = "config_invalid"


class AppsFileError(SettingsError):
    """apps.json is unsafe, corrupt or full; nothing was changed. The message says which."""

    code = "apps_file_invalid"


class GrantsFileError(SettingsError):
    """grants.json is unsafe, corrupt or full; nothing was changed. The message says which."""

    code = "grants_file_invalid"


class DispatchError(DeskhandError):
    """About an action on the desktop: every one states its ``delivery`` — the branch or class
    gives the default, the raiser the exact value where it depends (a stop while observing is
    ``refused``, while acting ``unknown``)."""


class Refusal(DispatchError):
    """Deskhand (or the person, through it) refused before anything reached the desktop:
    ``delivery`` is ``refused``."""

    default_delivery = "refused"


class AppNotAllowed(Refusal):
    """The app is not on the allowlist; nothing was sent to the backend.

    Only the person may add an app (``deskhandctl apps add NAME``).
    """

    code = "app_not_allowed"


class ConsentDenied(Refusal):
    """Deskhand's own consent for this app is missing: the person said no, nobody could be
    asked, or access was revoked while the question was open (``data.reason``). Nothing was
    sent to the backend."""

    code = "consent_denied"


class QuestionExpired(Refusal):
    """A question for the person stayed unanswered until its deadline
    (``native.question_timeout_s``): nothing was sent. ``data.app``, ``data.waited_s``."""

    code = "question_expired"


class NoOneToAsk(Refusal):
    """Nobody could be asked: the client cannot answer questions and no console
    (``deskhandctl questions``) is connected, or the last one went away. Callers turn it into
    their own refusal (consent: ``consent_denied``; an approval: ``cancel`` to the backend)."""

    code = "no_one_to_ask"


class AppUnidentified(Refusal):
    """The app could not be resolved to an executable identity without launching it, so no
    consent can cover it. Nothing was sent; give its full path or bundle id."""

    code = "app_unidentified"


class IdentityChanged(Refusal):
    """The app's executable changed between the person's decision and the launch; nothing was
    launched. Ask again."""

    code = "identity_changed"


class StateError(Refusal):
    """A stateId cannot be used for this action; observe the app again (``get_app_state``).

    Decided without any backend traffic. Subclasses name the exact reason.
    """

    code = "state_unknown"


class StateUnknown(StateError):
    code = "state_unknown"


class StateExpired(StateError):
    code = "state_expired"


class StateConsumed(StateError):
    code = "state_consumed"


class StateWrongApp(StateError):
    code = "state_wrong_app"


class StateWrongTurn(StateError):
    code = "state_wrong_turn"


class StateInvalidated(StateError):
    code = "state_invalidated"


class ElementNotInState(StateError):
    code = "element_not_in_state"


class CoordinatesNeedScreenshot(StateError):
    code = "coordinates_need_screenshot"


class CoordinatesOutsideWindow(Refusal):
    """A click's or drag's point lies outside the app's window as the observation's screenshot
    shows it. ``data``: ``x``, ``y`` and, when known, ``width`` and ``height`` (the screenshot's
    size in pixels; points count from its top-left corner). Refused before dispatch when the
    screenshot's size is known; the backend's own refusal of such a point (its
    ``invalidParameter``) gets the same code with ``delivery: dispatched``."""

    code = "coordinates_outside_window"


class RecoveryPending(Refusal):
    """The app changed under us; every op is refused until a fresh observation of it succeeds."""

    code = "recovery_pending"


class LaunchBanned(Refusal):
    """launch_app is banned for this app for the rest of the turn (stop, decline or unknown)."""

    code = "launch_banned"


class Locked(Refusal):
    """The emergency stop is engaged; only status and unlock are accepted."""

    code = "locked"


class QueueFull(Refusal):
    """The action queue is at its configured depth; try again shortly."""

    code = "queue_full"


class HandoffRequired(Refusal):
    """In jev mode, native actions need an active handoff for this app with budget left."""

    code = "handoff_required"


class AuditUnavailable(Refusal):
    """The dispatch's audit record could not be written (``data.path``, ``data.cause``), so
    nothing was dispatched: no action goes unrecorded. Free space or repair the audit
    directory, then try again."""

    code = "audit_unavailable"


class ApprovalDeclined(Refusal):
    """The person declined the backend's approval prompt for this app."""

    code = "approval_declined"


class ApprovalCancelled(Refusal):
    """The approval prompt was cancelled (no one could answer, unsupported, or cancelled)."""

    code = "approval_cancelled"
    default_delivery = "refused"


class BackendFault(DispatchError):
    """The backend's side: it could not be reached, failed, or refused in its own terms. A
    remote fault; ``delivery`` says whether the call got there."""


class BackendUnavailable(BackendFault):
    """The backend could not be started, or died before a call was sent. Nothing happened."""

    code = "backend_unavailable"
    default_delivery = "refused"


class DesktopUnreachable(BackendUnavailable):
    """``auto`` found a desktop session it cannot operate (no accessibility bus, no X display
    or XTEST), so no backend was started: never the simulator in its place. The message names
    the fix; ``data.checks`` lists every check. Nothing happened on the desktop."""

    code = "desktop_unreachable"


class BackendTimeout(BackendFault):
    """Starting the backend took too long (``data.phase``: start, initialize, tools_list).

    No tool call was sent, so nothing happened on the desktop. Timeouts of a call in flight are
    :class:`OutcomeUnknown` instead.
    """

    code = "backend_timeout"
    default_delivery = "refused"


class BackendError(BackendFault):
    """The backend answered with a JSON-RPC error (``data.rpc_code``); the call did not run."""

    code = "backend_error"
    default_delivery = "refused"


class OutcomeUnknown(BackendFault):
    """A call was sent but its result never arrived (timeout, crash, broken pipe, garbage),
    or the app it was acting on went away in the middle of it.

    The action may or may not have happened. Deskhand never retries it: observe again.
    """

    code = "outcome_unknown"
    default_delivery = "unknown"


class SessionStopped(BackendFault):
    """The person pressed Stop for this turn; no observation or action until a new turn."""

    code = "session_stopped"


class StateChanged(BackendFault):
    """The person changed the app; observe it again before any other op."""

    code = "state_changed"


class InputTargetChanged(BackendFault):
    """The backend stopped an action before sending more input because the input would no
    longer have reached the app the person allowed (another window took the keyboard focus
    or covers the point). ``delivery`` is ``refused`` when nothing was sent, else ``partial``
    with the count in ``delivered``. Observe again before acting."""

    code = "input_target_changed"


class AppExited(BackendFault):
    """The app's process ended while the backend read it, started it or sent it input
    (``data.exit``: how it ended, ``signal 11 (SIGSEGV)`` or ``status 1``, when known;
    ``data.during``: ``reading``, ``starting`` or ``acting``). ``delivery`` is ``refused``
    when no input was sent, ``unknown`` when some may have reached it."""

    code = "app_exited"


class AppNotAccessible(BackendFault):
    """The app runs but gives the accessibility bus nothing to read, so it cannot be observed
    or operated until it is restarted (``data.hint``: ``restart``, or ``restart_chromium``
    for a Chromium or Electron app started without its accessibility switch). Nothing was
    sent."""

    code = "app_not_accessible"
    default_delivery = "refused"


class FocusOutsideApp(BackendFault):
    """Keys were not sent because the element with the keyboard focus is not inside the
    app's window (another app, or nothing, has it). Nothing was sent."""

    code = "focus_outside_app"
    default_delivery = "refused"


class BlockedByDialog(BackendFault):
    """The element lies behind a modal dialog of the app (``data.dialog``), which takes every
    input until it is answered. Nothing was sent."""

    code = "blocked_by_dialog"
    default_delivery = "refused"


class NoEffect(BackendFault):
    """The action was delivered, and reading the element back shows it unchanged
    (``data.what``: ``value``, ``text`` or ``selection``): the app did not take it."""

    code = "no_effect"
    default_delivery = "dispatched"


class BackendRefused(BackendFault):
    """The backend refused the call because of its arguments or its target, and said so in its
    own terms; the message says in ours what was wrong and what to do, and
    ``data.backend_text`` keeps the backend's text. Nothing was done on the desktop, except
    where the message says to look. Each subclass is one case with its own code."""

    code = "backend_refused"
    default_delivery = "dispatched"


class InvalidArgument(BackendRefused):
    """An argument the backend found invalid that no more precise code covers."""

    code = "invalid_argument"


class InputUnavailable(BackendRefused):
    """The backend cannot send keys or clicks on this desktop (no X display, no remote-desktop
    interface on Wayland); ``data.backend_text`` says what is missing. ``refused`` when the
    backend said nothing went out before it failed."""

    code = "input_unavailable"


class ElementGone(BackendRefused):
    """The element index no longer names an element: the app changed since the observation."""

    code = "element_gone"


class ElementNotOnScreen(BackendRefused):
    """The element has no place on screen (hidden or scrolled away), so it cannot be clicked."""

    code = "element_not_on_screen"


class ElementNotSettable(BackendRefused):
    """``set_value`` on an element that takes no value."""

    code = "element_not_settable"


class ValueInvalid(BackendRefused):
    """``set_value`` with a value the element cannot take (a number element given words)."""

    code = "value_invalid"


class SecondaryActionUnknown(BackendRefused):
    """``perform_secondary_action`` with an action the element does not list."""

    code = "secondary_action_unknown"


class TextNotFound(BackendRefused):
    """``select_text``: the text (with its prefix and suffix) is not in the element."""

    code = "text_not_found"


class TextNotSelectable(BackendRefused):
    """``select_text`` on an element whose text cannot be selected."""

    code = "text_not_selectable"


class KeyUnknown(BackendRefused):
    """``press_key`` with a key name the backend does not know."""

    code = "key_unknown"


class CharacterNotTypable(BackendRefused):
    """``type_text`` with a character the backend has no key for."""

    code = "character_not_typable"


class AppNotFound(BackendRefused):
    """The backend knows no app by the name given."""

    code = "app_not_found"


class AppForbidden(BackendRefused):
    """The backend never operates this app: its safety list or an organization's policy
    (``data.reason``: ``safety`` or ``organization_policy``). Deskhand cannot override it."""

    code = "app_forbidden"


class AppAmbiguous(BackendRefused):
    """The identifier given names several apps; a name or full path tells them apart."""

    code = "app_ambiguous"


class AppNotRunning(BackendRefused):
    """The app the observation came from is no longer running."""

    code = "app_not_running"


class NoWindow(BackendRefused):
    """The app has no window the backend can see or capture (none open, minimized, hidden)."""

    code = "no_window"


class JevError(DeskhandError):
    """The Jev API (a remote service) failed or refused; no desktop action was dispatched for
    that step."""


class JevUnavailable(JevError):
    """The Jev API could not be reached or kept failing (network, 429 or 5xx after retries)."""

    code = "jev_unavailable"


class JevTimeout(JevError):
    """A Jev request took longer than its per-attempt limit; no desktop action was dispatched."""

    code = "jev_timeout"


class JevRejected(JevError):
    """The Jev API refused the request (a 4xx other than 429: key, quota, request shape)."""

    code = "jev_rejected"


class JevInvalidResponse(JevError):
    """The Jev API answered with something that is not a valid set of answers."""

    code = "jev_invalid_response"


class RunStopped(DeskhandError):
    """A Jev run stopped at one of its own limits before any further dispatch."""


class TraceIncomplete(RunStopped):
    """The run's trace could not be written (budget reached or a write failed); the run stopped
    before any further dispatch rather than act without a record."""

    code = "trace_incomplete"


class TaskDeadlineExceeded(RunStopped):
    """This turn's Jev runs used up their time budget; the calling agent decides what next."""

    code = "task_deadline_exceeded"


class ActionBudgetExhausted(RunStopped):
    """This turn's Jev runs (or a handoff) used up their action attempts."""

    code = "action_budget_exhausted"


class RequestCancelled(DispatchError):
    """The request was cancelled (by the client, a disconnect or the emergency stop)."""

    code = "cancelled"
    default_delivery = "unknown"


class InternalError(DeskhandError):
    """A bug in Deskhand. The details are in the daemon log, never in the reply."""

    code = "internal"


class StartupError(Exception):
    """The daemon cannot start (socket directory unsafe, already running, ...).

    Not a client-facing error: it is printed once and the process exits non-zero.
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


EX_CONFIG = 78  # sysexits.h: configuration error
EX_UNAVAILABLE = 69  # sysexits.h: the socket cannot be used (unsafe directory, bad path)
EX_ALREADY_RUNNING = 75  # sysexits.h EX_TEMPFAIL: another daemon serves this socket; connect to it

"""Daemon-to-client messages: results (tagged by ``kind``), errors and pushed events. Pure."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

from deskhand_d.errors import Delivery

# ----- replies ---------------------------------------------------------------------------------


# An error's ``data`` is an open object (each code adds its own keys), and ``delivery`` is a
# typed member of it: present on every error about an action on the desktop (the daemon always
# states it, see DeskhandError.reply_data), absent on the others. ``handoff_steps_left`` is the
# other typed member: on every error about a native action in jev mode, the steps the planner's
# handoff still allows (0 once it is closed), as on ActionDone. Kept a plain dict on the wire
# and in Python, so no key a client already reads moves or disappears; the schema (and so the
# generated TypeScript) names both.
ErrorData = Annotated[
    dict[str, Any],
    msgspec.Meta(
        extra_json_schema={
            "properties": {
                "delivery": {"enum": list(get_args(Delivery))},
                "handoff_steps_left": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": True,
        }
    ),
]


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str
    data: ErrorData = msgspec.field(default_factory=dict)


class _Result(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class Welcome(_Result, tag="welcome", frozen=True):
    daemon_version: str
    protocol: int
    session_id: str
    pid: int
    session_name: str = ""
    resumed: bool = False
    mode: str = "native"


class ClientSummary(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    kind: str
    version: str
    pid: int
    uid: int
    connected_s: float


class OpStats(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float


class BackendStatus(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    running_pid: int | None
    processes_started: int
    simulated: bool = False
    """True while the simulated desktop serves: its apps and windows are made up, not the
    person's. Clients say so wherever they show the desktop."""


class StatusResult(_Result, tag="status", frozen=True):
    version: str
    pid: int
    uptime_s: float
    socket: str
    protocol: int
    subprotocols: list[str]
    clients: list[ClientSummary]
    ops: dict[str, OpStats]
    backend: BackendStatus | None = None
    queue_depth: int = 0
    desktop_holder: str = ""
    """Who the backend is working for right now (session, client, pid), or empty."""
    locked_by: str = ""
    """Who engaged the emergency stop, or empty when not locked."""
    sessions: int = 0
    audit: AuditStatus | None = None


class AuditStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The audit log, as far as a person needs to know it."""

    path: str
    """The current audit file, or empty when there is none (then nothing is dispatched)."""
    problem: str = ""
    """Why there is no audit log, or empty."""
    unfinished_at_start: int = 0
    """Dispatches that an earlier run of the daemon began and never finished (it stopped or
    crashed in flight): their outcome is unknown. ``deskhandctl audit`` lists them."""


class Pong(_Result, tag="pong", frozen=True):
    data: str = ""


class ShuttingDownResult(_Result, tag="shutting_down", frozen=True):
    pass


class SchemaDifference(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    problem: str


class DoctorFinding(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    evidence: str
    remedy: str


class DesktopCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One thing an action needs of the desktop, checked without touching it (no input event,
    no window changed). ``name``: ``display``, ``xtest``, ``screenshot``, ``accessibility_bus``;
    on a Wayland session ``display``, ``input``, ``screenshot``, ``accessibility_bus``."""

    name: str
    status: Literal["ok", "failed", "not_checked"]
    detail: str
    """What was found, as a sentence."""
    fix: str = ""
    """What to do about it, when it failed."""


class LaunchAttempt(msgspec.Struct, frozen=True, kw_only=True):
    """One command line (recipe) tried when the backend last started: ``ok``, ``refused``
    (recognisably, so the next recipe was tried) or ``failed`` (no other one was tried)."""

    recipe: str
    outcome: Literal["ok", "refused", "failed"]
    detail: str = ""


class ActionProbe(msgspec.Struct, frozen=True, kw_only=True):
    """One read-only tool call that proves actions can get through (Sky: ``list_apps``).
    ``not_checked`` says why it was not sent; ``detail`` never lists the apps themselves."""

    tool: str
    status: Literal["ok", "failed", "not_checked"]
    detail: str


class DoctorResult(_Result, tag="doctor", frozen=True):
    backend: str
    """The configured kind and the one chosen, e.g. ``auto -> sim``."""
    argv: list[str]
    notice: str
    handshake_ok: bool
    error: ErrorBody | None = None
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    pid: int | None = None
    tools: list[str] = msgspec.field(default_factory=list)
    schema_differences: list[SchemaDifference] = msgspec.field(default_factory=list)
    findings: list[DoctorFinding] = msgspec.field(default_factory=list)
    exit_status: int | None = None
    """How the last backend process ended, if one has ended."""
    stderr_tail: list[str] = msgspec.field(default_factory=list)
    """The last lines the backend wrote to stderr (for a failed handshake)."""
    checks: list[DesktopCheck] = msgspec.field(default_factory=list)
    """What the chosen backend needs of the desktop (the AT-SPI backend: the X display, XTEST,
    screenshots, the accessibility bus), each with its fix; empty for other backends."""
    simulated: bool = False
    """True when the simulated desktop serves: nothing there is the person's real desktop."""
    recipe: str = ""
    """Sky: the jump host's command line in use (or the last one tried), by name."""
    recipe_choice: str = ""
    """Sky: why that recipe went first: ``default``, ``remembered`` or ``pinned``."""
    attempts: list[LaunchAttempt] = msgspec.field(default_factory=list)
    """Sky: each recipe tried at the last start, in order."""
    responsibility: str = ""
    """Sky: whether macOS counts the jump host as its own responsible process, and if not why."""
    probe: ActionProbe | None = None
    """Sky: the read-only tool call that proves the action path (never sent to other backends)."""


class Observation(_Result, tag="observation", frozen=True):
    """A fresh observation: the accessibility tree as text (untrusted app content), a
    screenshot if the backend sent one, and a single-use ``state_id`` valid for 60 s."""

    app: str
    state_id: str
    text: str
    screenshot: bytes | None = None
    screenshot_mime: str = ""
    expires_in_s: float = 60.0
    approval_reason: str | None = None


class ActionDone(_Result, tag="action", frozen=True):
    """An action the backend answered, or a launch the system's launcher carried out (``tool``
    ``launch_app``); ``delivery`` is always ``dispatched`` here.

    ``ok`` is False when the backend reported an error for the action (``text`` says what).
    When the backend's reply was a complete tree of the same app, ``state_id`` is a new
    action-returned stateId (not for coordinate actions: it carries no screenshot). A
    screenshot the backend sent with its answer is passed on for people and planners to see.
    A launch's ``text`` says what the system was asked to open; it carries no stateId.
    """

    app: str
    tool: str
    delivery: Delivery
    ok: bool
    text: str
    state_id: str | None = None
    screenshot: bytes | None = None
    screenshot_mime: str = ""
    approval_reason: str | None = None
    effect: Literal["changed", "unreadable"] | None = None
    """Whether reading the acted-on element back showed the change (``changed``) or could
    not tell (``unreadable``); None where the backend did not read it back (clicks, keys,
    Sky). An element left unchanged is an error (``no_effect``), never this reply."""
    effect_of: str = ""
    """What was read back for ``effect``: ``value``, ``text`` or ``selection``."""
    handoff_steps_left: int | None = None
    """In jev mode, the native steps the planner's handoff allows after this action (0: the
    handoff is closed and the next action needs a new Jev run); None outside jev mode."""


class AppList(_Result, tag="app_list", frozen=True):
    text: str


class AllowedApps(_Result, tag="allowed_apps", frozen=True):
    apps: list[str]
    in_apps_file: list[str]
    """The entries of apps.json (added by the person), a subset of ``apps``."""
    file: str
    added: bool | None = None


class GrantInfo(msgspec.Struct, frozen=True, kw_only=True):
    app: str
    path: str
    kind: str  # signed | package
    signer: str
    detail: str
    granted_at: str
    revoked_at: str | None = None
    restored_at: str | None = None


class Grants(_Result, tag="grants", frozen=True):
    """Saved grants (``grants_list``) or the ones just changed (revoke / restore)."""

    grants: list[GrantInfo]
    file: str
    cancelled: int | None = None
    """Revoke only: queued and in-flight calls cancelled (in-flight ones ended unknown)."""
    not_saved: str = ""
    """Revoke only: the revocation is in force in the daemon now but grants.json could not be
    written (why); the daemon keeps refusing the grant and saves it once the file can be
    written. Empty when saved."""


class HandoffInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the calling agent gets back when Jev hands a step over (``needs_planner``)."""

    token: str
    app: str
    goal: str
    remaining_steps: int
    context: str
    recent_actions: list[str]
    candidates: list[dict[str, Any]]
    candidates_truncated: bool
    instruction: str


class RunResult(_Result, tag="run", frozen=True):
    """How a Jev run ended. ``verified`` only when the verify spec matched; ``model_done`` is
    Jev's claim, never verified. ``steps`` counts dispatches that returned."""

    # done | model_done | dry_run | max_steps | needs_planner | confirm | escalate | stop | error
    status: str
    reason: str
    steps: int
    verified: bool
    elapsed_ms: int
    outcome_unknown: bool = False
    trace_path: str | None = None
    trace_incomplete: bool = False
    decision: dict[str, Any] | None = None
    planned: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    handoff: HandoffInfo | None = None
    budget_remaining_s: float | None = None
    budget_remaining_actions: int | None = None
    # For a run that a refusal or failure ended (``stop`` or ``error``): the cause and what to
    # do, in words (never a key or a request body). Empty otherwise.
    detail: str = ""


class ModeState(_Result, tag="mode", frozen=True):
    """The session's mode; ``reason`` (a stable code) and ``detail`` (what to do, in words)
    say why it is not the mode asked for, for example ``missing_jev_key``."""

    mode: str
    reason: str = ""
    detail: str = ""


class Done(_Result, tag="done", frozen=True):
    """An op with nothing more to say (turn_begin, turn_end, cancel, answer, unlock, ...)."""

    detail: str = ""


class PendingQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """One open question, as a console shows it. ``text`` is untrusted (an app's or the
    backend's words, or names an agent chose): quote it, never follow it."""

    id: str
    kind: Literal["backend_approval", "app_consent", "full_trace"]
    text: str
    app: str
    choices: list[str]
    client: str
    """The asking client's name, as its hello gave it."""
    client_pid: int
    session: str
    """The asking connection's session name (empty for an unnamed session)."""
    asked_s_ago: float
    expires_in_s: float


class QuestionList(_Result, tag="questions", frozen=True):
    """``questions_watch``: every open question, oldest first, and the version of that set
    (send it back as ``after`` to wait for the next change)."""

    version: int
    questions: list[PendingQuestion]


class LockState(_Result, tag="lock", frozen=True):
    locked: bool
    by: str = ""
    cancelled: int = 0


ResultBody = (
    Welcome
    | StatusResult
    | Pong
    | ShuttingDownResult
    | DoctorResult
    | Observation
    | ActionDone
    | AppList
    | AllowedApps
    | Grants
    | RunResult
    | ModeState
    | Done
    | LockState
    | QuestionList
)


class _Reply(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class Result(_Reply, tag="result", frozen=True):
    id: int
    result: ResultBody


class Error(_Reply, tag="error", frozen=True):
    id: int | None
    error: ErrorBody


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class Notice(_Event, tag="notice", frozen=True):
    """Something the person should know that is not a reply (e.g. the daemon is stopping)."""

    code: str
    message: str


class Progress(_Event, tag="progress", frozen=True):
    """One step of a Jev run, pushed to the client that started it while it runs."""

    request_id: int
    step: int
    phase: str  # decided | dispatched | finished
    line: str
    action: str | None = None
    gate: str | None = None
    candidates: int | None = None
    total: int | None = None


class Question(_Event, tag="question", frozen=True):
    """Something only the person may decide. ``text`` comes from the backend or an app and is
    untrusted: show it as quoted text, never follow instructions in it. Answer with the
    ``answer`` op; no answer by the time the request ends counts as cancel, never accept."""

    id: str
    request_id: int
    question: Literal["backend_approval", "app_consent", "full_trace"]
    text: str
    app: str = ""
    choices: list[str] = msgspec.field(default_factory=lambda: ["accept", "decline"])


class QuestionClosed(_Event, tag="question_closed", frozen=True):
    """A question asked for one of this connection's requests is no longer open: withdraw it
    wherever it is shown. ``how``: ``answered`` (``by`` the asking ``client`` or a
    ``console``), ``expired`` (nobody answered in time) or ``cancelled`` (its request ended,
    or the last console that could answer it went away); ``by`` is empty unless answered."""

    id: str
    how: Literal["answered", "expired", "cancelled"]
    by: Literal["client", "console", ""] = ""


EventBody = Notice | Question | QuestionClosed | Progress


class Event(_Reply, tag="event", frozen=True):
    event: EventBody


ServerMessage = Result | Error | Event

__all__ = [
    "ActionDone",
    "ActionProbe",
    "AllowedApps",
    "AppList",
    "AuditStatus",
    "BackendStatus",
    "ClientSummary",
    "Delivery",
    "DesktopCheck",
    "DoctorFinding",
    "DoctorResult",
    "Done",
    "Error",
    "ErrorBody",
    "ErrorData",
    "Event",
    "EventBody",
    "GrantInfo",
    "Grants",
    "HandoffInfo",
    "LaunchAttempt",
    "LockState",
    "ModeState",
    "Notice",
    "Observation",
    "OpStats",
    "PendingQuestion",
    "Pong",
    "Progress",
    "Question",
    "QuestionClosed",
    "QuestionList",
    "Result",
    "ResultBody",
    "RunResult",
    "SchemaDifference",
    "ServerMessage",
    "ShuttingDownResult",
    "StatusResult",
    "Welcome",
]

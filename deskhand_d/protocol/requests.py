"""Client-to-daemon requests: one frozen Struct per op, tagged by ``op``. Pure."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

ClientKind = Literal["cli", "agent", "pi", "mcp", "test", "other"]


class _Request(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="op"
):
    id: int


ShortText = Annotated[str, msgspec.Meta(max_length=200)]


class ClientInfo(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: ShortText
    version: ShortText = ""
    kind: ClientKind = "other"


SessionName = Annotated[str, msgspec.Meta(max_length=100, pattern=r"^[A-Za-z0-9._-]*$")]
AppName = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
StateId = Annotated[str, msgspec.Meta(max_length=100)]
Mode = Literal["native", "jev"]


class Hello(_Request, tag="hello", frozen=True):
    """First request on every connection: who the client is and what it can do.

    ``session`` names a daemon session to open or resume (so consecutive CLI invocations share
    state); empty means a fresh session that lives as long as this connection (plus a grace).
    """

    protocol: int
    client: ClientInfo
    can_answer_questions: bool = False
    session: SessionName = ""


class Status(_Request, tag="status", frozen=True):
    """Ask for the daemon's health, clients and per-op statistics."""


class Ping(_Request, tag="ping", frozen=True):
    """A liveness check; ``data`` is echoed back unchanged (at most 1 KiB)."""

    data: Annotated[str, msgspec.Meta(max_length=1024)] = ""


class Shutdown(_Request, tag="shutdown", frozen=True):
    """Ask the daemon to stop gracefully."""


class Doctor(_Request, tag="doctor", frozen=True):
    """Check the backend without touching the desktop: its handshake, and for Sky one
    read-only ``list_apps`` that proves tool calls get through; never an action.

    ``backend`` checks that kind instead of the configured one (a throwaway process, closed
    afterwards); empty: the daemon's own backend."""

    backend: Literal["", "auto", "sky", "atspi", "sim", "command"] = ""


# ----- session and control ---------------------------------------------------------------------


class TurnBegin(_Request, tag="turn_begin", frozen=True):
    """Start a new turn: stateIds of the previous turn stop working."""


class TurnEnd(_Request, tag="turn_end", frozen=True):
    """End the current turn: its stateIds, handoffs and launch bans go."""


class SessionClose(_Request, tag="session_close", frozen=True):
    """End this connection's session now: its stateIds go and its queued work is cancelled."""


class ModeGet(_Request, tag="mode_get", frozen=True):
    pass


class ModeSet(_Request, tag="mode_set", frozen=True):
    mode: Mode


class Stop(_Request, tag="stop", frozen=True):
    """Emergency stop: cancel everything, close the backend, lock the daemon."""


class Unlock(_Request, tag="unlock", frozen=True):
    pass


class Cancel(_Request, tag="cancel", frozen=True):
    """Cancel one of this connection's requests (queued or running)."""

    request_id: int


class Answer(_Request, tag="answer", frozen=True):
    """Answer a question event for the person."""

    question_id: Annotated[str, msgspec.Meta(max_length=100)]
    choice: Literal["accept", "decline", "once", "always", "deny"]


class QuestionPass(_Request, tag="question_pass", frozen=True):
    """This connection could not put one of its questions to the person: its host answered
    for itself (as agent hosts do in runs with nobody at them) or had no way to show it.
    Nobody's answer is recorded: the question waits for a console (``deskhandctl
    questions``), or, with none open, closes and the request is refused as asked of nobody."""

    question_id: Annotated[str, msgspec.Meta(max_length=100)]


class QuestionsWatch(_Request, tag="questions_watch", frozen=True):
    """List the questions waiting for the person, from every client, and wait for a change.

    Replies at once when the daemon's question ``version`` differs from ``after``; otherwise
    when the set changes or ``wait_s`` passes. The connection becomes a console for the rest
    of its life: questions of clients that cannot answer wait for it, and it may answer any
    open question. Only a connection whose hello declared ``can_answer_questions`` may ask."""

    after: Annotated[int, msgspec.Meta(ge=0, le=2**53 - 1)] = 0
    wait_s: Annotated[float, msgspec.Meta(ge=0, le=60)] = 25.0


class AppsList(_Request, tag="apps_list", frozen=True):
    pass


class AppsAdd(_Request, tag="apps_add", frozen=True):
    """Add one app to the allowlist (only ever at the person's explicit request)."""

    app: AppName


class GrantsList(_Request, tag="grants_list", frozen=True):
    """The saved ("always allow") consent grants, active and revoked."""


class GrantsRevoke(_Request, tag="grants_revoke", frozen=True):
    """Revoke the saved grants for an app (by the name it was granted under, or its path)."""

    app: AppName


class GrantsRestore(_Request, tag="grants_restore", frozen=True):
    """Bring back revoked saved grants for an app (the person's explicit decision)."""

    app: AppName


# ----- jev mode ---------------------------------------------------------------------------------


class VerifySpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Done means: some element has exactly this role and this label. Declarative, never code."""

    role: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    label_equals: Annotated[str, msgspec.Meta(max_length=1000)]


class Run(_Request, tag="run", frozen=True):
    """Run a Jev task: observe, ask Jev, gate, act once, observe, verify; step by step."""

    app: AppName
    goal: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    dry_run: bool = False
    max_steps: Annotated[int, msgspec.Meta(ge=1, le=20)] = 5
    candidate_max: Annotated[int, msgspec.Meta(ge=1, le=200)] = 40
    verify: VerifySpec | None = None
    plan: Annotated[str, msgspec.Meta(max_length=4000)] = ""
    constraints: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=1000)]], msgspec.Meta(max_length=20)
    ] = msgspec.field(default_factory=list)
    text: Annotated[str, msgspec.Meta(max_length=10_000)] | None = None
    key: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None
    direction: Literal["up", "down", "left", "right"] | None = None
    full_trace: bool = False
    """Record everything (trees, inputs, Jev's exchanges); asks the person first."""


# ----- native ops: the backend's ten tools plus launch_app ---------------------------------------


class ListApps(_Request, tag="list_apps", frozen=True):
    pass


class GetAppState(_Request, tag="get_app_state", frozen=True):
    app: AppName


class LaunchApp(_Request, tag="launch_app", frozen=True):
    app: AppName


class _Action(_Request, frozen=True):
    app: AppName
    state_id: StateId
    handoff: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    """In jev mode: the token of the active planner handoff for this app."""


ElementIndex = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]


class Click(_Action, tag="click", frozen=True, kw_only=True):
    element_index: ElementIndex | None = None
    x: float | None = None
    y: float | None = None
    click_count: Annotated[int, msgspec.Meta(ge=1, le=3)] | None = None
    mouse_button: Literal["left", "right", "middle"] | None = None


class Drag(_Action, tag="drag", frozen=True, kw_only=True):
    from_x: float
    from_y: float
    to_x: float
    to_y: float


class PerformSecondaryAction(_Action, tag="perform_secondary_action", frozen=True, kw_only=True):
    element_index: ElementIndex
    action: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class PressKey(_Action, tag="press_key", frozen=True, kw_only=True):
    key: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class Scroll(_Action, tag="scroll", frozen=True, kw_only=True):
    element_index: ElementIndex
    direction: Literal["up", "down", "left", "right"]
    pages: Annotated[float, msgspec.Meta(gt=0, le=100)] | None = None


class SelectText(_Action, tag="select_text", frozen=True, kw_only=True):
    element_index: ElementIndex
    text: Annotated[str, msgspec.Meta(max_length=100_000)]
    # Context that tells one occurrence of ``text`` from another: never longer than a text.
    prefix: Annotated[str, msgspec.Meta(max_length=100_000)] | None = None
    suffix: Annotated[str, msgspec.Meta(max_length=100_000)] | None = None
    selection: Literal["text", "cursor_before", "cursor_after"] | None = None


class SetValue(_Action, tag="set_value", frozen=True, kw_only=True):
    element_index: ElementIndex
    value: Annotated[str, msgspec.Meta(max_length=1_000_000)]


class TypeText(_Action, tag="type_text", frozen=True, kw_only=True):
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]


Action = (
    Click | Drag | PerformSecondaryAction | PressKey | Scroll | SelectText | SetValue | TypeText
)

Request = (
    Hello
    | Status
    | Ping
    | Shutdown
    | Doctor
    | TurnBegin
    | TurnEnd
    | SessionClose
    | ModeGet
    | ModeSet
    | Stop
    | Unlock
    | Cancel
    | Answer
    | QuestionPass
    | QuestionsWatch
    | AppsList
    | AppsAdd
    | GrantsList
    | GrantsRevoke
    | GrantsRestore
    | Run
    | ListApps
    | GetAppState
    | LaunchApp
    | Click
    | Drag
    | PerformSecondaryAction
    | PressKey
    | Scroll
    | SelectText
    | SetValue
    | TypeText
)

__all__ = [
    "Action",
    "Answer",
    "AppName",
    "AppsAdd",
    "AppsList",
    "Cancel",
    "Click",
    "ClientInfo",
    "ClientKind",
    "Doctor",
    "Drag",
    "ElementIndex",
    "GetAppState",
    "GrantsList",
    "GrantsRestore",
    "GrantsRevoke",
    "Hello",
    "LaunchApp",
    "ListApps",
    "Mode",
    "ModeGet",
    "ModeSet",
    "PerformSecondaryAction",
    "Ping",
    "PressKey",
    "QuestionPass",
    "QuestionsWatch",
    "Request",
    "Run",
    "Scroll",
    "SelectText",
    "SessionClose",
    "SessionName",
    "SetValue",
    "ShortText",
    "Shutdown",
    "StateId",
    "Status",
    "Stop",
    "TurnBegin",
    "TurnEnd",
    "TypeText",
    "Unlock",
    "VerifySpec",
]

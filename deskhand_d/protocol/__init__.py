"""The client protocol: every message that crosses the daemon's socket, as msgspec Structs.

This module is pure (no I/O). It owns the wire types, the two encodings (JSON and msgpack,
selected by the WebSocket subprotocol) and request decoding that never raises anything but
:class:`BadRequest`. The daemon and the tests import it; the CLI does not (it speaks the JSON
form with the standard library, see ``clients/deskhandctl``), and ``docs/protocol.schema.json``
is generated from it.

Shape: a client sends requests ``{"op": ..., "id": N, ...}``; the daemon answers each with
``{"type": "result", "id": N, "result": {"kind": ...}}`` or
``{"type": "error", "id": N | null, "error": {"code", "message", "data"}}`` and may push
``{"type": "event", "event": {"kind": ...}}`` at any time.
"""

from __future__ import annotations

from deskhand_d.protocol.codec import (
    MAX_ID as MAX_ID,
)
from deskhand_d.protocol.codec import (
    PROTOCOL_VERSION as PROTOCOL_VERSION,
)
from deskhand_d.protocol.codec import (
    SUBPROTOCOL_JSON as SUBPROTOCOL_JSON,
)
from deskhand_d.protocol.codec import (
    SUBPROTOCOL_MSGPACK as SUBPROTOCOL_MSGPACK,
)
from deskhand_d.protocol.codec import (
    SUBPROTOCOLS as SUBPROTOCOLS,
)
from deskhand_d.protocol.codec import (
    WS_PATH as WS_PATH,
)
from deskhand_d.protocol.codec import (
    Codec as Codec,
)
from deskhand_d.protocol.codec import (
    pick_subprotocol as pick_subprotocol,
)
from deskhand_d.protocol.codec import (
    schema as schema,
)
from deskhand_d.protocol.replies import (
    ActionDone as ActionDone,
)
from deskhand_d.protocol.replies import (
    AllowedApps as AllowedApps,
)
from deskhand_d.protocol.replies import (
    AppList as AppList,
)
from deskhand_d.protocol.replies import (
    BackendStatus as BackendStatus,
)
from deskhand_d.protocol.replies import (
    ClientSummary as ClientSummary,
)
from deskhand_d.protocol.replies import (
    Delivery as Delivery,
)
from deskhand_d.protocol.replies import (
    DoctorFinding as DoctorFinding,
)
from deskhand_d.protocol.replies import (
    DoctorResult as DoctorResult,
)
from deskhand_d.protocol.replies import (
    Done as Done,
)
from deskhand_d.protocol.replies import (
    Error as Error,
)
from deskhand_d.protocol.replies import (
    ErrorBody as ErrorBody,
)
from deskhand_d.protocol.replies import (
    Event as Event,
)
from deskhand_d.protocol.replies import (
    EventBody as EventBody,
)
from deskhand_d.protocol.replies import (
    LockState as LockState,
)
from deskhand_d.protocol.replies import (
    ModeState as ModeState,
)
from deskhand_d.protocol.replies import (
    Notice as Notice,
)
from deskhand_d.protocol.replies import (
    Observation as Observation,
)
from deskhand_d.protocol.replies import (
    OpStats as OpStats,
)
from deskhand_d.protocol.replies import (
    Pong as Pong,
)
from deskhand_d.protocol.replies import (
    Question as Question,
)
from deskhand_d.protocol.replies import (
    Result as Result,
)
from deskhand_d.protocol.replies import (
    ResultBody as ResultBody,
)
from deskhand_d.protocol.replies import (
    SchemaDifference as SchemaDifference,
)
from deskhand_d.protocol.replies import (
    ServerMessage as ServerMessage,
)
from deskhand_d.protocol.replies import (
    ShuttingDownResult as ShuttingDownResult,
)
from deskhand_d.protocol.replies import (
    StatusResult as StatusResult,
)
from deskhand_d.protocol.replies import (
    Welcome as Welcome,
)
from deskhand_d.protocol.requests import (
    Action as Action,
)
from deskhand_d.protocol.requests import (
    Answer as Answer,
)
from deskhand_d.protocol.requests import (
    AppName as AppName,
)
from deskhand_d.protocol.requests import (
    AppsAdd as AppsAdd,
)
from deskhand_d.protocol.requests import (
    AppsList as AppsList,
)
from deskhand_d.protocol.requests import (
    Cancel as Cancel,
)
from deskhand_d.protocol.requests import (
    Click as Click,
)
from deskhand_d.protocol.requests import (
    ClientInfo as ClientInfo,
)
from deskhand_d.protocol.requests import (
    Doctor as Doctor,
)
from deskhand_d.protocol.requests import (
    Drag as Drag,
)
from deskhand_d.protocol.requests import (
    ElementIndex as ElementIndex,
)
from deskhand_d.protocol.requests import (
    GetAppState as GetAppState,
)
from deskhand_d.protocol.requests import (
    Hello as Hello,
)
from deskhand_d.protocol.requests import (
    LaunchApp as LaunchApp,
)
from deskhand_d.protocol.requests import (
    ListApps as ListApps,
)
from deskhand_d.protocol.requests import (
    Mode as Mode,
)
from deskhand_d.protocol.requests import (
    ModeGet as ModeGet,
)
from deskhand_d.protocol.requests import (
    ModeSet as ModeSet,
)
from deskhand_d.protocol.requests import (
    PerformSecondaryAction as PerformSecondaryAction,
)
from deskhand_d.protocol.requests import (
    Ping as Ping,
)
from deskhand_d.protocol.requests import (
    PressKey as PressKey,
)
from deskhand_d.protocol.requests import (
    Request as Request,
)
from deskhand_d.protocol.requests import (
    Scroll as Scroll,
)
from deskhand_d.protocol.requests import (
    SelectText as SelectText,
)
from deskhand_d.protocol.requests import (
    SessionName as SessionName,
)
from deskhand_d.protocol.requests import (
    SetValue as SetValue,
)
from deskhand_d.protocol.requests import (
    ShortText as ShortText,
)
from deskhand_d.protocol.requests import (
    Shutdown as Shutdown,
)
from deskhand_d.protocol.requests import (
    StateId as StateId,
)
from deskhand_d.protocol.requests import (
    Status as Status,
)
from deskhand_d.protocol.requests import (
    Stop as Stop,
)
from deskhand_d.protocol.requests import (
    TurnBegin as TurnBegin,
)
from deskhand_d.protocol.requests import (
    TurnEnd as TurnEnd,
)
from deskhand_d.protocol.requests import (
    TypeText as TypeText,
)
from deskhand_d.protocol.requests import (
    Unlock as Unlock,
)

"""The MCP side of ``deskhandctl mcp`` without any I/O: JSON-RPC messages, the lifecycle,
and the questions it puts to the host.

What this owns:

* reading one line of stdin into a :class:`Request`, :class:`Notification` or
  :class:`Response`, or the JSON-RPC error that answers it (:func:`parse_line`);
* the lifecycle: which protocol revision we answer (:func:`negotiate`), what the host is
  (:class:`Host`: its name and version, whether it can answer elicitations), the ``initialize``
  result, and the daemon session name we derive from the host (:func:`session_name`);
* elicitation: a daemon ``question`` event as ``elicitation/create`` params in the negotiated
  revision's form (:func:`elicitation_params`), and the host's answer read back into a choice
  the daemon takes (:func:`choice_from_answer`), never accepting for the host.

The tools themselves (table, arguments, results) are :mod:`deskhandctl.facade.tools`; the daemon
connection is :mod:`deskhandctl.facade.link`; reading and writing stdio is
:mod:`deskhandctl.facade.server`. Standard library only, and cheap to import: ``deskhandctl mcp``
must answer ``initialize`` about as fast as Python starts.
"""

from __future__ import annotations

from deskhandctl.wire import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REVISIONS = ("2025-11-25", "2025-06-18")
"""The MCP revisions we speak, newest first."""
SERVER_NAME = "deskhand"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32000  # JSON-RPC's range for a server's own errors
INTERNAL_ERROR = -32603

INSTRUCTIONS = (
    "Deskhand operates desktop apps for you through one daemon that the person controls. "
    "Work in a loop: get_app_state(app) returns the app's accessibility tree, a screenshot "
    "and a stateId; every action (click, type_text, press_key, ...) needs that stateId as "
    "state_id, works once, and within 60 seconds. An action's result may carry a new stateId "
    "for the next action; when it does not, call get_app_state again. When a tool returns an "
    "error, its text says what to do next; follow it rather than retrying blindly. The "
    "person may be asked to allow an app; a refusal is their decision."
)


def error_message(request_id: object, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def result_message(request_id: object, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def encode(message: dict[str, Any]) -> bytes:
    """One message as a stdio line: compact UTF-8 JSON (never a raw newline inside) and ``\\n``."""
    return jsontext.dumps_compact(message).encode() + b"\n"


# ----- reading a line ----------------------------------------------------------------------------


class Request:
    """A request from the host: it expects exactly one response with this ``id``."""

    __slots__ = ("id", "method", "params")

    def __init__(self, request_id: str | int, method: str, params: dict[str, Any]) -> None:
        self.id = request_id
        self.method = method
        self.params = params


class Notification:
    """A notification from the host: never answered."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.method = method
        self.params = params


class Response:
    """The host's answer to one of our requests (an elicitation): ``result`` or ``error``."""

    __slots__ = ("error", "id", "result")

    def __init__(
        self, request_id: object, result: dict[str, Any] | None, error: dict[str, Any] | None
    ) -> None:
        self.id = request_id
        self.result = result
        self.error = error


Incoming = Request | Notification | Response


def _valid_id(value: object) -> bool:
    # JSON-RPC ids are strings or numbers; MCP forbids null. A bool is not a number here.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_line(line: bytes) -> Incoming | dict[str, Any]:
    """One line of stdin as a message, or the error response that answers it (sent with id
    null when no usable id could be read)."""
    try:
        value = jsontext.loads(line.decode())
    except ValueError:  # not UTF-8 (UnicodeDecodeError is one) or not JSON
        return error_message(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if isinstance(value, list):
        return error_message(
            None, INVALID_REQUEST, "Invalid Request: batches are not supported in MCP"
        )
    if not isinstance(value, dict):
        return error_message(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
    raw_id = value.get("id")
    request_id = raw_id if _valid_id(raw_id) else None
    if value.get("jsonrpc") != "2.0":
        return error_message(request_id, INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
    method = value.get("method")
    if method is None:
        if "id" in value and ("result" in value or "error" in value):
            result, error = value.get("result"), value.get("error")
            return Response(
                raw_id,
                result if isinstance(result, dict) else None,
                error if isinstance(error, dict) else ({} if "error" in value else None),
            )
        return error_message(request_id, INVALID_REQUEST, "Invalid Request: no method")
    if not isinstance(method, str):
        return error_message(request_id, INVALID_REQUEST, "Invalid Request: method not a string")
    params = value.get("params", {})
    if "id" in value and request_id is None:
        return error_message(
            None, INVALID_REQUEST, "Invalid Request: id must be a string or a number"
        )
    if not isinstance(params, dict):
        if request_id is None:
            return error_message(None, INVALID_REQUEST, "Invalid Request: params not an object")
        return error_message(request_id, INVALID_PARAMS, "Invalid params: not an object")
    if request_id is None:
        return Notification(method, params)
    return Request(request_id, method, params)


# ----- lifecycle ---------------------------------------------------------------------------------


class Host:
    """What ``initialize`` told us about the host."""

    __slots__ = ("elicitation", "name", "revision", "version")

    def __init__(self, *, revision: str, name: str, version: str, elicitation: bool) -> None:
        self.revision = revision
        self.name = name
        self.version = version
        self.elicitation = elicitation


def negotiate(params: dict[str, Any]) -> Host | str:
    """The host from ``initialize``'s params, or why they are unusable (for -32602).

    The revision is the host's when we speak it, else our newest (the spec's rule: answer
    another revision we support, and let the client decide whether it can use it).
    """
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        return "protocolVersion must be a string"
    info = params.get("clientInfo")
    info = info if isinstance(info, dict) else {}
    capabilities = params.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    elicitation = capabilities.get("elicitation")
    # Form mode: `{}` in 2025-06-18; `{}` or `{"form": {}}` in 2025-11-25 (a bare object means
    # form). A host declaring only `url` cannot show our form, so it cannot answer.
    form = isinstance(elicitation, dict) and (not elicitation or "form" in elicitation)
    name, version = info.get("name"), info.get("version")
    return Host(
        revision=requested if requested in REVISIONS else REVISIONS[0],
        name=name if isinstance(name, str) and name else "mcp-host",
        version=version if isinstance(version, str) else "",
        elicitation=form,
    )


def initialize_result(host: Host, server_version: str) -> dict[str, Any]:
    return {
        "protocolVersion": host.revision,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": SERVER_NAME, "title": "Deskhand", "version": server_version},
        "instructions": INSTRUCTIONS,
    }


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
SESSION_NAME_MAX = 100  # wire.names.SESSION_NAME_MAX; the daemon refuses longer names


def _clean(text: str) -> str:
    out = "".join(c if c in _NAME_CHARS else "-" for c in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-.")


def session_name(host: Host, pid: int, serial: int = 1) -> str:
    """The daemon session for one MCP connection: the host's name and version, so ``status``
    shows who holds the desktop, made unique by our pid (two windows of the same host are two
    sessions) and ``serial`` (a reconnect after a daemon restart opens a new one)."""
    suffix = f"-{pid}" + (f"-{serial}" if serial > 1 else "")
    head = _clean(f"{host.name}-{host.version}" if host.version else host.name) or "mcp"
    return head[: SESSION_NAME_MAX - len(suffix)].rstrip("-.") + suffix


# ----- elicitation -------------------------------------------------------------------------------

_CHOICE_TITLES = {
    "once": "Allow for this task only",
    "always": "Always allow this exact program",
    "deny": "Deny",
    "accept": "Accept",
    "decline": "Decline",
}
_REFUSAL = {"app_consent": "deny"}  # every other question is refused with "decline"


def refusal(question: str) -> str:
    """The choice that refuses ``question``: what every non-acceptance becomes."""
    return _REFUSAL.get(question, "decline")


def _quoted(text: str, limit: int = 4000) -> str:
    cut = text[:limit] + (" [cut]" if len(text) > limit else "")
    return "\n".join("> " + line for line in cut.splitlines() or [""])


def elicitation_message(event: dict[str, Any]) -> str:
    """The question in our words, then its text quoted and marked untrusted."""
    kind = str(event.get("question", ""))
    app = str(event.get("app") or "an app")[:200]
    text = str(event.get("text", ""))
    if kind == "app_consent":
        head = (
            f"Deskhand asks for your consent: an agent wants to operate {app!r} on your desktop. "
            "Allow it for this task only, always allow this exact program, or deny. "
            "Deskhand's description of the request (the app name in it comes from the agent):"
        )
    elif kind == "backend_approval":
        head = (
            f"The computer-use backend asks for your approval to use {app!r}. Its message, "
            "quoted as received (untrusted text from the backend, not from Deskhand):"
        )
    elif kind == "full_trace":
        head = (
            f"Deskhand would record a full trace of this task in {app!r} (screens, typed text "
            "and the planner's exchanges) to a file on this computer. Accept or decline. "
            "The request, quoted:"
        )
    else:
        head = f"Deskhand needs your decision ({kind}, {app!r}). The request, quoted:"
    return f"{head}\n{_quoted(text)}"


def elicitation_params(event: dict[str, Any], revision: str) -> dict[str, Any]:
    """``elicitation/create`` params for a daemon question: one required string property
    ``choice`` offering exactly the question's choices, titled (``oneOf`` consts in 2025-11-25,
    ``enum`` + ``enumNames`` in 2025-06-18). No top-level title or description in the schema:
    Codex refuses a form that has them."""
    kind = str(event.get("question", ""))
    raw = event.get("choices")
    choices = [c for c in raw if isinstance(c, str)] if isinstance(raw, list) else []
    if not choices:
        choices = ["accept", "decline"]
    prop: dict[str, Any] = {"type": "string", "title": "Your decision"}
    titles = [_CHOICE_TITLES.get(c, c) for c in choices]
    if revision == "2025-06-18":
        prop["enum"] = choices
        prop["enumNames"] = titles
    else:
        prop["oneOf"] = [{"const": c, "title": t} for c, t in zip(choices, titles, strict=True)]
    refuse = refusal(kind)
    if refuse in choices and revision != "2025-06-18":  # defaults arrived in 2025-11-25
        prop["default"] = refuse
    params: dict[str, Any] = {
        "message": elicitation_message(event),
        "requestedSchema": {
            "type": "object",
            "properties": {"choice": prop},
            "required": ["choice"],
        },
    }
    if revision != "2025-06-18":
        params["mode"] = "form"
    return params


# No person reads a question about their desktop and answers it this fast: an answer that comes
# back sooner was given by the host itself. Claude Code in print mode (`claude -p`) cancels every
# elicitation within about 10 ms, `codex exec` declines within 1 ms (both measured with Claude
# Code 2.1.332 and Codex 0.171.0). A person answering a dialog takes seconds.
PERSON_FLOOR_S = 1.0


def host_answered_itself(response: Response | None, elapsed_s: float) -> bool:
    """Whether the host's answer to an elicitation was the host's own and no person's: a
    refusal (decline, cancel, an error such as "method not found") that came back faster than
    a person could read the question. Such an answer is passed on (``question_pass``): the
    question waits for a console and is never counted as the person's no. An ``accept`` is
    never the host's own: a host that accepts by itself does so because the person configured
    it to (a hook they wrote), and it is taken as their answer."""
    if response is None:
        return False  # withdrawn, or the call ended: nothing to pass on
    accepted = response.result is not None and response.result.get("action") == "accept"
    return not accepted and elapsed_s < PERSON_FLOOR_S


def choice_from_answer(event: dict[str, Any], response: Response | None) -> str:
    """The daemon choice for the host's answer: ``accept`` with one of the offered choices is
    that choice; ``decline``, ``cancel``, an error, no answer or anything malformed is the
    refusal. Nothing else ever counts as acceptance."""
    kind = str(event.get("question", ""))
    refuse = refusal(kind)
    if response is None or response.result is None:
        return refuse
    if response.result.get("action") != "accept":
        return refuse
    content = response.result.get("content")
    choice = content.get("choice") if isinstance(content, dict) else None
    offered = event.get("choices")
    if isinstance(choice, str) and isinstance(offered, list) and choice in offered:
        return choice
    return refuse

"""What a ``tools/call`` result means. Pure.

Sky reports almost every failure as an ordinary result (``isError: true`` and one text block),
and some important ones as a bare sentence without ``isError``. :func:`classify` sorts a result
into one :class:`Kind`, matching Sky's exact texts. Two rules matter most:

* The stop notice counts only as a *standalone* reply. The same sentence inside an
  accessibility tree (a document that quotes it) is just content.
* A partial or diff update is never an observation: element indices in it cannot be trusted
  against a full tree, so it is rejected rather than parsed.
"""

from __future__ import annotations

import base64
import enum
import re
from typing import Any, Final, Literal

import msgspec

from deskhand_d.surface import DELIVERY_META, DIFF_MARKERS, EFFECT_META

STOP_NOTICE: Final = (
    "This application session has been explicitly stopped by the user for this turn. "
    "Stop your work and send a final message noting they stopped the session and you're ready "
    "to continue if they want you to. Computer Use can be used again in the next assistant "
    "turn."
)
STOP_MARKER: Final = "explicitly stopped by the user for this turn"
APPROVAL_DENIED_PREFIX: Final = "Computer Use approval denied via MCP elicitation for app '"
APPROVAL_CANCELED_PREFIX: Final = "Computer Use permission request canceled for app '"
NOT_AUTHENTICATED: Final = "Sender process is not authenticated"
PERMISSIONS_PENDING: Final = "Computer Use permissions are still pending."
PERMISSIONS_MISSING: Final = "Computer Use permissions are not granted"
ERROR_PREFIX: Final = "Computer Use server error "


class Kind(enum.StrEnum):
    OK = "ok"
    TOOL_ERROR = "tool_error"
    SESSION_STOPPED = "session_stopped"
    APPROVAL_DECLINED = "approval_declined"
    APPROVAL_CANCELLED = "approval_cancelled"
    NOT_AUTHENTICATED = "not_authenticated"
    PARTIAL_UPDATE = "partial_update"
    INPUT_STOPPED = "input_stopped"


class Shortfall(msgspec.Struct, frozen=True, kw_only=True):
    """Deskhand's own backends say so when a call did not do all it was asked
    (``_meta["deskhand/delivery"]``, see :data:`~deskhand_d.surface.DELIVERY_META`).

    ``state`` ``dispatched`` comes only with the reason ``no_effect``: the input arrived and
    reading the element back showed no change. The other fields say more about one reason
    each (``exit`` and ``during`` for ``app_exited``, ``hint`` for ``not_accessible``,
    ``dialog`` for ``modal_dialog``, ``what`` for ``no_effect``)."""

    state: Literal["refused", "partial", "unknown", "dispatched"]
    reason: str
    done: int | None = None
    total: int | None = None
    unit: str = ""
    exit: str = ""
    during: str = ""
    hint: str = ""
    dialog: str = ""
    what: str = ""


_STATES: Final = ("refused", "partial", "unknown", "dispatched")
#: The note of an error result given before anything was sent: still read as an error of its
#: kind (its text says what was wrong), with ``refused`` as its delivery.
NOT_SENT: Final = "not_sent"
_NOTE_FIELDS: Final = ("exit", "during", "hint", "dialog", "what")


def _note_text(note: dict[str, Any], key: str, limit: int = 200) -> str:
    value = note.get(key, "")
    return value[:limit] if isinstance(value, str) else ""


def shortfall(result: Any) -> Shortfall | None:
    """The delivery note of a result, or None (absent or malformed: ignored, not trusted)."""
    if not isinstance(result, dict):
        return None
    meta = result.get("_meta")
    note = meta.get(DELIVERY_META) if isinstance(meta, dict) else None
    if not isinstance(note, dict):
        return None
    state = note.get("state")
    if state not in _STATES:
        return None
    reason = str(note.get("reason", ""))[:40]
    if (state == "dispatched") != (reason == "no_effect"):
        return None  # only a change that did not happen was delivered and still falls short
    if reason == NOT_SENT and state != "refused":
        return None
    counts = [note.get(k) for k in ("done", "total")]
    ok = all(type(c) is int and c >= 0 for c in counts) and isinstance(note.get("unit"), str)
    return Shortfall(
        state=state,
        reason=reason,
        done=counts[0] if ok else None,
        total=counts[1] if ok else None,
        unit=str(note.get("unit", ""))[:40] if ok else "",
        **{k: _note_text(note, k) for k in _NOTE_FIELDS},
    )


Effect = Literal["changed", "unreadable"]


def effect(result: Any) -> tuple[Effect, str] | None:
    """``(effect, what)`` from a successful result's ``deskhand/effect`` note, or None."""
    if not isinstance(result, dict):
        return None
    meta = result.get("_meta")
    note = meta.get(EFFECT_META) if isinstance(meta, dict) else None
    if not isinstance(note, dict):
        return None
    said = note.get("effect")
    if said != "changed" and said != "unreadable":
        return None
    return said, _note_text(note, "what", 40)


class Image(msgspec.Struct, frozen=True):
    """A screenshot block, kept in its base64 form until someone needs the bytes.

    Most action replies carry one that nobody reads; decoding it eagerly was the largest
    single cost of classifying a reply.
    """

    mime_type: str
    base64: str

    def decode(self) -> bytes | None:
        """The image bytes, or None if the backend sent invalid base64."""
        try:
            return base64.b64decode(self.base64, validate=True)
        except ValueError:
            return None


class ToolOutput(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded result: its kind, joined text, images, and whether Sky flagged an error."""

    kind: Kind
    text: str
    images: tuple[Image, ...]
    is_error: bool
    shortfall: Shortfall | None = None
    effect: tuple[Effect, str] | None = None
    """What reading the acted-on element back showed, where the backend did (see
    :func:`effect`); None when it did not say."""


def _strip_code(text: str) -> str:
    """``Computer Use server error -10012: <sentence>`` → ``<sentence>``."""
    if text.startswith(ERROR_PREFIX):
        _, sep, rest = text.partition(": ")
        if sep:
            return rest
    return text


def is_stop_notice(text: str) -> bool:
    body = _strip_code(text.strip())
    return body == STOP_NOTICE


def decode(result: Any) -> tuple[str, tuple[Image, ...], bool]:
    """Join text blocks and decode image blocks; tolerate odd shapes without raising."""
    if not isinstance(result, dict):
        return "", (), False
    texts: list[str] = []
    images: list[Image] = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image" and isinstance(block.get("data"), str) and block["data"]:
            images.append(Image(mime_type=str(block.get("mimeType", "")), base64=block["data"]))
    return "\n".join(texts), tuple(images), result.get("isError") is True


HEADER_LINES = 8
_ELEMENT_LINE = re.compile(r"^\t*\d+ ")


def _has_diff_header(text: str) -> bool:
    """Diff markers count only in the header, before the first element line of a tree."""
    # The header is a handful of lines (banner, <app_state>, App=, Window:, diff headers);
    # never scan a whole tree of thousands of lines for it.
    for line in text.split("\n", HEADER_LINES)[:HEADER_LINES]:
        if _ELEMENT_LINE.match(line):
            return False
        if line.lstrip("+~ ").startswith(DIFF_MARKERS):
            return True
    return False


def classify(result: Any) -> ToolOutput:
    text, images, is_error = decode(result)
    kind = Kind.OK
    short = shortfall(result) if is_error else None
    if short is not None and short.reason != NOT_SENT:
        return ToolOutput(
            kind=Kind.INPUT_STOPPED, text=text, images=images, is_error=True, shortfall=short
        )
    head = text[:400].lstrip()  # every marker below is at the start of a standalone reply
    if head.startswith(("This application session", ERROR_PREFIX)) and is_stop_notice(text):
        kind = Kind.SESSION_STOPPED
    elif head.startswith(APPROVAL_DENIED_PREFIX):
        kind = Kind.APPROVAL_DECLINED
    elif head.startswith(APPROVAL_CANCELED_PREFIX):
        kind = Kind.APPROVAL_CANCELLED
    elif len(head) < 200 and NOT_AUTHENTICATED in head and "-10000" in head:
        kind = Kind.NOT_AUTHENTICATED
    elif is_error:
        kind = Kind.TOOL_ERROR
        if short is not None:  # not_sent: an error like any other, known to have sent nothing
            return ToolOutput(kind=kind, text=text, images=images, is_error=True, shortfall=short)
    elif _has_diff_header(text):
        kind = Kind.PARTIAL_UPDATE
    seen = effect(result) if kind is Kind.OK else None
    return ToolOutput(kind=kind, text=text, images=images, is_error=is_error, effect=seen)

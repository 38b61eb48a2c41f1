"""Sky's app-approval prompts (``elicitation/create``): what we accept and how a call decides.

Pure. Two parts:

* :func:`classify` checks one elicitation request. Only a confirmation is supported: an object
  schema with no properties, a message of 1 to 4000 characters, and ``mode`` absent or
  ``"form"``. A non-empty form or URL mode is *unsupported*; a request missing its message or
  schema is *incomplete*. Neither is ever shown to the person.
* :class:`CallApprovals` is the state of the approvals within one tool call. Every sequential
  request goes to the person separately. Once the call has seen a decline or a cancel it stays
  refused: later requests are refused without asking and a late "accept" cannot overturn it.
  The reason recorded for the call (:attr:`CallApprovals.reason`) is what logs and results carry;
  never the prompt text or arguments.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final, Literal

MAX_MESSAGE: Final = 4000

Answer = Literal["accept", "decline", "cancel"]


class Reason(enum.StrEnum):
    USER_ACCEPTED = "user_accepted"
    USER_DECLINED = "user_declined"
    HANDLER_UNAVAILABLE = "handler_unavailable"
    HANDLER_ERROR = "handler_error"
    UNSUPPORTED_REQUEST = "unsupported_request"
    CONCURRENT_REQUEST = "concurrent_request"
    INCOMPLETE_REQUEST = "incomplete_request"
    CALLER_CANCELLED = "caller_cancelled"
    QUESTION_EXPIRED = "question_expired"


class NoAnswer(Exception):
    """Raised by an approval handler that got no answer from the person (nobody could be
    asked, or the question expired): the backend is answered ``cancel`` with ``reason``."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A well-formed yes/no question from the backend, safe to show to the person."""

    message: str
    risk_level: str = ""
    subtitle: str = ""
    persist_options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unusable:
    reason: Reason


def classify(params: Any) -> Confirmation | Unusable:
    if not isinstance(params, dict):
        return Unusable(Reason.INCOMPLETE_REQUEST)
    mode = params.get("mode")
    if mode is not None and mode != "form":
        return Unusable(Reason.UNSUPPORTED_REQUEST)  # e.g. URL mode: never opened for the person
    message = params.get("message")
    schema = params.get("requestedSchema")
    if not isinstance(message, str) or not isinstance(schema, dict):
        return Unusable(Reason.INCOMPLETE_REQUEST)
    if not 1 <= len(message) <= MAX_MESSAGE or not message.strip():
        return Unusable(Reason.INCOMPLETE_REQUEST)
    if schema.get("type") != "object":
        return Unusable(Reason.UNSUPPORTED_REQUEST)
    props = schema.get("properties", {})
    if not isinstance(props, dict) or props or schema.get("required"):
        return Unusable(Reason.UNSUPPORTED_REQUEST)  # a real form: we only confirm
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    persist = meta.get("persist")
    return Confirmation(
        message=message,
        risk_level=str(meta.get("riskLevel", "")) if meta.get("riskLevel") else "",
        subtitle=str(meta.get("subtitle", ""))[:MAX_MESSAGE] if meta.get("subtitle") else "",
        persist_options=tuple(p for p in persist if isinstance(p, str))
        if isinstance(persist, list)
        else (),
    )


def reply_for(answer: Answer) -> dict[str, Any]:
    """The ElicitResult for an answer. An accept carries ``content: {}`` (SDKs require it)."""
    if answer == "accept":
        return {"action": "accept", "content": {}}
    return {"action": answer}


@dataclass(slots=True)
class CallApprovals:
    """Approval state of one tool call."""

    asked: int = 0
    asking: bool = False
    refused_with: Answer | None = None
    reasons: list[Reason] = field(default_factory=list)

    @property
    def reason(self) -> Reason | None:
        """The reason that decided the call: its first refusal, else the person's accept."""
        for r in self.reasons:
            if r is not Reason.USER_ACCEPTED:
                return r
        return Reason.USER_ACCEPTED if self.reasons else None

    @property
    def refused(self) -> bool:
        return self.refused_with is not None

    def refuse(self, reason: Reason, answer: Answer = "cancel") -> Answer:
        """Record a refusal; the answer to send is the call's first refusal kind."""
        self.reasons.append(reason)
        if self.refused_with is None:
            self.refused_with = answer
        return self.refused_with

    def prefilter(self, request: Confirmation | Unusable) -> Answer | None:
        """Answer a request without asking the person, or None if the person must decide.

        None also marks the call as asking until :meth:`settle`.
        """
        if self.refused_with is not None:
            return self.refused_with  # sticky: no new question once refused
        if self.asking:
            return self.refuse(Reason.CONCURRENT_REQUEST)
        if isinstance(request, Unusable):
            return self.refuse(request.reason)
        self.asking = True
        self.asked += 1
        return None

    def settle(self, answer: Answer, reason: Reason) -> Answer:
        """Record the outcome of asking; a refusal seen meanwhile wins over a late accept."""
        self.asking = False
        if answer == "accept" and self.refused_with is None:
            self.reasons.append(Reason.USER_ACCEPTED)
            return "accept"
        if answer == "accept":
            return self.refused_with or "cancel"
        return self.refuse(reason, answer)

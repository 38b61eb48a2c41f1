"""Scenario knobs: the test-facing switches that make the simulator misbehave on purpose.

What this owns: the typed scenario document (decoded with msgspec, unknown keys rejected so a
typo fails loudly), where it is read from (``--scenario PATH`` or ``DESKHAND_SIM_SCENARIO``
holding JSON), and the small matching rule shared by every "when" knob. Every knob is described
in ``docs/simulator.md``; defaults reproduce a well-behaved Sky with zero latency.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import msgspec

from ..core import texts

ENV_SCENARIO = "DESKHAND_SIM_SCENARIO"
ENV_RECORD = "DESKHAND_SIM_RECORD"


class When(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which ``tools/call`` requests a knob applies to; every given condition must hold.

    ``call`` and ``after_calls`` count ``tools/call`` requests from 1 in arrival order.
    """

    tool: str | None = None
    call: int | None = None
    after_calls: int | None = None

    def matches(self, tool: str, ordinal: int) -> bool:
        if self.tool is not None and self.tool != tool:
            return False
        if self.call is not None and self.call != ordinal:
            return False
        return self.after_calls is None or ordinal > self.after_calls


class Crash(When, frozen=True, kw_only=True, forbid_unknown_fields=True):
    exit_code: int = 70
    partial_line: bool = False


class Garbage(When, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: str = "simulated noise: this line is not JSON"


ErrorName = Literal[
    "unauthenticated",
    "noWindowsAvailable",
    "cgWindowNotFound",
    "timeoutReached",
    "invalidParameter",
    "permissionsPending",
    "permissionsMissing",
    "screenLocked",
    "screenLockedNoThread",
    "versionMismatch",
    "userChangedApp",
    "orgPolicy",
    "runningAppNotFound",
    "stop",
    "turnEnded",
]


class Inject(When, frozen=True, kw_only=True, forbid_unknown_fields=True):
    error: ErrorName


class FocusChange(When, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The person brings ``app`` to the front just before the matching call."""

    app: str


class TextEditSetup(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: str = ""
    path: str | None = None


class CalendarEvent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    date: str
    title: str
    calendar: str = "Home"


# Typical latencies measured on real Sky (spec §10): used only with realistic_latency.
_REALISTIC_MS = {"list_apps": 100, "get_app_state": 400, "press_key": 600, "type_text": 600}


class Scenario(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole knob set; see docs/simulator.md for what each one does."""

    host: str = "ChatGPT"
    locale: Literal["en", "zh-Hans"] = "en"
    cua_version: str = texts.DEFAULT_CUA_VERSION
    server_version: str = texts.DEFAULT_SERVER_VERSION
    today: str | None = None
    now: str | None = None
    preapproved: list[str] = msgspec.field(default_factory=list)
    elicitation: Literal["confirm", "form", "url"] = "confirm"
    elicitation_delay_ms: int | None = None
    realistic_latency: bool = False
    double_approval: bool = False
    delay_ms: dict[str, int] = msgspec.field(default_factory=dict)
    unauthenticated: bool = False
    stop: When | None = None
    stop_is_error: bool = True
    turn_end: When | None = None
    crash: Crash | None = None
    hang: list[When] = msgspec.field(default_factory=list)
    garbage: list[Garbage] = msgspec.field(default_factory=list)
    inject: list[Inject] = msgspec.field(default_factory=list)
    relaunch: list[When] = msgspec.field(default_factory=list)
    frontmost: list[FocusChange] = msgspec.field(default_factory=list)
    receipts: bool = False
    telemetry: bool = True
    screenshots: bool = True
    action_screenshots: bool = True
    image_format: Literal["jpeg", "png"] = "jpeg"
    partial_update: Literal["off", "diff", "cumulative", "no_change"] = "off"
    stop_text_in_document: bool = False
    numeric_element_index: Literal["accept", "reject"] = "accept"
    textedit: TextEditSetup = msgspec.field(default_factory=TextEditSetup)
    events: list[CalendarEvent] = msgspec.field(default_factory=list)
    holidays: bool = True

    def delay_for(self, tool: str) -> float:
        """Seconds to wait before handling ``tool``: ``delay_ms[tool]``, else ``delay_ms["*"]``,
        else the realistic figure when ``realistic_latency`` is on, else nothing."""
        fallback = _REALISTIC_MS.get(tool, 300) if self.realistic_latency else 0
        return self.delay_ms.get(tool, self.delay_ms.get("*", fallback)) / 1000.0

    def elicitation_delay(self) -> float:
        """Seconds between a call needing approval and the prompt going out."""
        if self.elicitation_delay_ms is not None:
            return self.elicitation_delay_ms / 1000.0
        return 0.985 if self.realistic_latency else 0.0


class ScenarioError(Exception):
    """The scenario document is unreadable or has a bad knob; the simulator refuses to start."""


def decode(data: bytes | str) -> Scenario:
    try:
        return msgspec.json.decode(data, type=Scenario)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"bad scenario: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ScenarioError(f"scenario is not JSON: {exc}") from None


def load(path: str | None, environ: dict[str, str] | None = None) -> Scenario:
    """The scenario from ``path`` if given, else from the environment, else the defaults."""
    env = os.environ if environ is None else environ
    if path is not None:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ScenarioError(f"cannot read scenario {path}: {exc.strerror}") from None
        return decode(raw)
    text = env.get(ENV_SCENARIO, "").strip()
    return decode(text) if text else Scenario()

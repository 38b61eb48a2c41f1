"""Operator logs: structlog configured once, in one place.

JSON lines on stderr when it is not a terminal (journald, launchd log files), a readable console
renderer otherwise. A redaction processor replaces every configured secret value, wherever it
appears in an event (keys, values, nested containers, exception text), with ``[REDACTED]``.
Message payloads are never logged at info level; modules log event names and small facts.

Repeats are rate-limited, so a flood of one event (5,000 refused connects from another user,
say) cannot fill the disk or bury everything else: of the events alike — same level, same
event name, same values of the fields in :data:`KEY_FIELDS` — the first :data:`BURST` of each
:data:`WINDOW_S`-second window are written and the rest only counted. When the window ends,
one ``log.suppressed`` line says how many were held back (``count``, ``of``: the event, and
its key fields); a new window starts with the next one. The first lines are never held back.
Summaries are written before the next event that finds their window over, by
:func:`summarise_due` (the daemon calls it every few seconds) and by :func:`flush` at exit.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, TextIO, TypeAlias

import structlog

REDACTED = "[REDACTED]"
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
_LEVELS["error"] = logging.ERROR

BURST: Final = 50
"""Events alike written per window before the rest are only counted (enough for a burst of
clients doing the same thing at once)."""
WINDOW_S: Final = 60.0
SUMMARY_EVENT: Final = "log.suppressed"
KEY_FIELDS: Final = ("uid", "app", "tool", "op", "code", "reason", "cause", "why", "error")
"""Fields that say *what kind* of thing happened, so events differing in them are not alike
(two users refused are two stories). Every other field (pids, connection numbers, counts,
durations) differs from one occurrence to the next, so it is left out: a flood from ever new
processes is still one flood."""
_MAX_KEYS: Final = 1024
_MAX_KEY_VALUE: Final = 200

EventKey: TypeAlias = tuple[str, str, tuple[tuple[str, Hashable], ...]]
"""What makes events alike: (level, event name, ((key field, value), ...))."""


@dataclass(frozen=True, slots=True)
class Suppressed:
    """How many events alike (``key``) a window held back."""

    key: EventKey
    count: int
    over_s: float
    """How long the window was open, seconds."""


@dataclass(slots=True)
class _Window:
    start: float
    seen: int = 0


class RateLimiter:
    """Which events alike are written: per key, the first ``burst`` in each window of
    ``window_s`` seconds (a window opens at its key's first event). Thread-safe; the clock is
    injected so the rule can be tested without waiting.

    With ``max_keys`` keys open, a new key is folded into its level and event name alone
    (its key fields dropped): an attacker who can vary a key field must not grow this table
    without bound, nor escape the limit by varying it."""

    def __init__(
        self,
        *,
        burst: int = BURST,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = _MAX_KEYS,
    ) -> None:
        if burst < 1 or window_s <= 0:
            raise ValueError("burst and window_s must be positive")
        self.burst = burst
        self.window_s = window_s
        self._clock = clock
        self._max_keys = max_keys
        self._windows: dict[EventKey, _Window] = {}
        self._next_due = math.inf
        self._lock = threading.Lock()

    def admit(self, key: EventKey) -> tuple[bool, list[Suppressed]]:
        """Whether to write this event, and the summaries of windows now over, which belong
        before it."""
        with self._lock:
            now = self._clock()
            summaries = self._collect(now, everything=False)
            window = self._windows.get(key)
            if window is None:
                if len(self._windows) >= self._max_keys:
                    key = (key[0], key[1], ())
                    window = self._windows.get(key)
                if window is None:
                    window = self._windows[key] = _Window(start=now)
                    self._next_due = min(self._next_due, now + self.window_s)
            window.seen += 1
            return window.seen <= self.burst, summaries

    def due(self) -> list[Suppressed]:
        """Summaries of the windows that are over (they are forgotten once returned)."""
        with self._lock:
            return self._collect(self._clock(), everything=False)

    def drain(self) -> list[Suppressed]:
        """Summaries of every window that held something back, over or not (at exit)."""
        with self._lock:
            return self._collect(self._clock(), everything=True)

    def _collect(self, now: float, *, everything: bool) -> list[Suppressed]:
        if not everything and now < self._next_due:
            return []
        out: list[Suppressed] = []
        for key, window in list(self._windows.items()):
            if everything or now - window.start >= self.window_s:
                del self._windows[key]
                if window.seen > self.burst:
                    out.append(Suppressed(key, window.seen - self.burst, now - window.start))
        starts = [w.start for w in self._windows.values()]
        self._next_due = min(starts) + self.window_s if starts else math.inf
        return out


def event_key(level: str, event: MutableMapping[str, Any]) -> EventKey:
    """What makes two events alike: level, event name and the :data:`KEY_FIELDS` they carry."""
    fields = tuple(
        (name, _hashable(event[name])) for name in KEY_FIELDS if event.get(name) is not None
    )
    return (level, str(event.get("event", "")), fields)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, bool | int | float | str):
        return value if not isinstance(value, str) else value[:_MAX_KEY_VALUE]
    return repr(value)[:_MAX_KEY_VALUE]


class RateLimit:
    """A structlog processor (after ``add_log_level``): drops an event the limiter holds back
    (``structlog.DropEvent``) and writes the summaries it hands back, through the same
    pipeline (so they are redacted and rendered like any line) and before the event."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if event.get("event") == SUMMARY_EVENT:
            return event  # a summary is never held back (and never summarised again)
        level = str(event.get("level", method))
        written, summaries = self.limiter.admit(event_key(level, event))
        write_summaries(summaries)
        if not written:
            raise structlog.DropEvent
        return event


def write_summaries(summaries: Iterable[Suppressed]) -> None:
    """One ``log.suppressed`` line per summary, at the level of the events it counts."""
    logger = structlog.get_logger("deskhand.log")
    for s in summaries:
        level, name, fields = s.key
        getattr(logger, level, logger.warning)(
            SUMMARY_EVENT,
            of=name,
            count=s.count,
            over_s=round(s.over_s, 1),
            **dict(fields),
        )


_limiter: RateLimiter | None = None


class Redactor:
    """A structlog processor that scrubs secret values from every event dictionary."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def scrub(self, value: Any) -> Any:
        if not self._secrets:
            return value
        if isinstance(value, str):
            for secret in self._secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
            return value
        if isinstance(value, bytes):
            return self.scrub(value.decode("utf-8", "replace"))
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.scrub(v) for v in value]
        if isinstance(value, BaseException):
            return self.scrub(f"{type(value).__name__}: {value}")
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.scrub(repr(value))

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        return {self.scrub(k): self.scrub(v) for k, v in event.items()}


def configure(
    *,
    level: str = "info",
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
    limiter: RateLimiter | None = None,
) -> None:
    """Configure structlog for the daemon. Safe to call again (tests, reloads); each call
    starts a fresh :class:`RateLimiter` unless one is given (tests give one with a fake clock).
    """
    global _limiter
    out = stream if stream is not None else sys.stderr
    redactor = Redactor(secrets)
    _limiter = limiter or RateLimiter()
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        # Before the costlier steps: a held-back event is dropped having cost a dict lookup.
        RateLimit(_limiter),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        # Redaction runs after exceptions are rendered to text, so tracebacks are scrubbed too.
        redactor,
    ]
    if out.isatty():
        processors.append(structlog.dev.ConsoleRenderer(colors=False))
    else:
        processors.append(structlog.processors.JSONRenderer())
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        # Loggers are cached on first use: an uncached proxy re-binds on every call, which
        # costs more than the event itself. configure() runs before anything logs.
        cache_logger_on_first_use=True,
    )


def summarise_due() -> None:
    """Write the summaries of rate-limit windows that are over (called every few seconds, so
    a flood that stopped is still reported without waiting for another event)."""
    if _limiter is not None:
        write_summaries(_limiter.due())


def flush() -> None:
    """Write every pending summary, then flush stderr so the last lines reach
    journald/launchd before exit."""
    if _limiter is not None:
        write_summaries(_limiter.drain())
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass

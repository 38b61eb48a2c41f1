"""Operator logs: structlog configured once, in one place.

JSON lines on stderr when it is not a terminal (journald, launchd log files), a readable console
renderer otherwise. A redaction processor replaces every configured secret value, wherever it
appears in an event (keys, values, nested containers, exception text), with ``[REDACTED]``.
Message payloads are never logged at info level; modules log event names and small facts.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any, TextIO

import structlog

REDACTED = "[REDACTED]"
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
_LEVELS["error"] = logging.ERROR


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
    *, level: str = "info", secrets: Iterable[str] = (), stream: TextIO | None = None
) -> None:
    """Configure structlog for the daemon. Safe to call again (tests, reloads)."""
    out = stream if stream is not None else sys.stderr
    redactor = Redactor(secrets)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
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


def flush() -> None:
    """Flush stderr so the last lines reach journald/launchd before exit."""
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass

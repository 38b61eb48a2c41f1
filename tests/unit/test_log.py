"""Logging: JSON lines off a TTY, and secrets scrubbed from every event."""

from __future__ import annotations

import io
import json

import structlog

from deskhand_d import log


def _capture(secrets: list[str]) -> tuple[io.StringIO, structlog.typing.FilteringBoundLogger]:
    buf = io.StringIO()
    log.configure(level="debug", secrets=secrets, stream=buf)
    return buf, structlog.get_logger("t")


def test_json_lines_when_not_a_tty() -> None:
    """Each event is one JSON object per line with level and timestamp."""
    buf, logger = _capture([])
    logger.info("thing.happened", n=3)
    line = json.loads(buf.getvalue().strip())
    assert line["event"] == "thing.happened" and line["n"] == 3
    assert line["level"] == "info" and "timestamp" in line


def test_secret_is_redacted_everywhere() -> None:
    """A configured secret disappears from values, nested data, keys and tracebacks."""
    secret = "sk-live-0123456789"
    buf, logger = _capture([secret])
    logger.info("a", header=f"Bearer {secret}", nested={"k": [secret, 1]}, **{secret: "v"})
    try:
        raise ValueError(f"bad key {secret}")
    except ValueError:
        logger.exception("b")
    out = buf.getvalue()
    assert secret not in out
    assert out.count(log.REDACTED) >= 4


def test_level_filtering() -> None:
    """Debug events are dropped at info level."""
    buf = io.StringIO()
    log.configure(level="info", secrets=[], stream=buf)
    structlog.get_logger("t").debug("hidden")
    assert buf.getvalue() == ""


def test_short_values_are_not_treated_as_secrets() -> None:
    """Tiny values are ignored so an empty or 1-char variable cannot blank out logs."""
    r = log.Redactor(["", "a"])
    assert r.scrub("banana") == "banana"

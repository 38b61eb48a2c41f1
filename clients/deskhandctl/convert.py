"""Value converters for command-line arguments: text in, value out, ValueError if invalid.

argparse words a ValueError's message as "invalid value ...: <message>"; the fast parser simply
declines the command line so that argparse can say so. Standard library only, no imports.
"""

from __future__ import annotations

SESSION_NAME_MAX = 100
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def parse_timeout(text: str) -> float:
    """``--timeout`` values: a number of seconds greater than zero."""
    value = float(text)  # ValueError for anything else
    if not value > 0 or value == float("inf"):
        raise ValueError("must be more than 0 seconds")
    return value


def parse_session(text: str) -> str:
    """A session name: letters, digits, ``.``, ``_`` and ``-``, at most 100 characters."""
    if len(text) > SESSION_NAME_MAX:
        raise ValueError(f"longer than {SESSION_NAME_MAX} characters")
    if not _SESSION_CHARS.issuperset(text):
        raise ValueError("only letters, digits, '.', '_' and '-' are allowed")
    return text


def parse_index(text: str) -> int:
    """An element index as the observation numbers them: 0 to 1,000,000."""
    value = int(text)
    if not 0 <= value <= 1_000_000:
        raise ValueError("must be between 0 and 1000000")
    return value


def parse_count(text: str) -> int:
    """``--count``: single, double or triple click."""
    value = int(text)
    if not 1 <= value <= 3:
        raise ValueError("must be 1, 2 or 3")
    return value


def parse_last(text: str) -> int:
    """``audit --last``: how many dispatches to show."""
    value = int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def parse_number(text: str) -> float:
    """A finite coordinate."""
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("must be a finite number")
    return value


def parse_pages(text: str) -> float:
    """``--pages``: more than 0, at most 100."""
    value = float(text)
    if not 0 < value <= 100:
        raise ValueError("must be more than 0 and at most 100")
    return value


def parse_point(text: str) -> tuple[float, float]:
    """``X,Y``: two finite numbers separated by a comma."""
    x, comma, y = text.partition(",")
    if not comma:
        raise ValueError("expected X,Y")
    return parse_number(x), parse_number(y)


def parse_text(text: str) -> str:
    """A non-empty string."""
    if not text:
        raise ValueError("must not be empty")
    return text

"""Session names, as the daemon accepts them: what ``--session`` and ``$DESKHAND_SESSION`` may say.

Owned by the wire layer because the session name is part of the hello the daemon checks;
:mod:`deskhandctl.cli.grammar` uses :func:`parse_session` for ``--session`` and
:mod:`deskhandctl.wire.connect` for ``$DESKHAND_SESSION``; both import it only when a name is
given, so a plain ``deskhandctl status`` never loads it.
"""

from __future__ import annotations

SESSION_NAME_MAX = 100
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def parse_session(text: str) -> str:
    """A session name: letters, digits, ``.``, ``_`` and ``-``, at most 100 characters.

    Raises:
        ValueError: the name is too long or has another character (the message says which).
    """
    if len(text) > SESSION_NAME_MAX:
        raise ValueError(f"longer than {SESSION_NAME_MAX} characters")
    if not _SESSION_CHARS.issuperset(text):
        raise ValueError("only letters, digits, '.', '_' and '-' are allowed")
    return text

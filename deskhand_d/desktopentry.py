"""Desktop entries (the freedesktop.org ``.desktop`` files): the main group and ``Exec=``. Pure.

Only what identifying an app needs: the ``[Desktop Entry]`` keys, and the program an ``Exec=``
line starts (quoting, field codes and an ``env`` prefix handled as the specification says).
"""

from __future__ import annotations

import os
import re

_FIELD_CODES = frozenset("fFuUdDnNickvm")
_ARG = re.compile(r'"(?P<quoted>(?:[^"\\]|\\.)*)"(?=\s|$)|(?P<bare>[^\s"]+)(?=\s|$)|\S')
_PIECE = re.compile(r"%.?|[^%]+")
_STRING_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _unescape(value: str) -> str:
    out: list[str] = []
    chars = iter(value)
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append(_STRING_ESCAPES.get(nxt, c + nxt))  # unknown (``\;``): keep as written
        else:
            out.append(c)
    return "".join(out)


def parse_desktop_entry(text: str) -> dict[str, str]:
    """The keys of the ``[Desktop Entry]`` group, values unescaped; first occurrence wins."""
    entry: dict[str, str] = {}
    in_group = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            in_group = line == "[Desktop Entry]"
            continue
        key, sep, value = line.partition("=")
        if in_group and sep:
            entry.setdefault(key.strip(), _unescape(value.strip()))
    return entry


def exec_args(exec_line: str) -> list[str] | None:
    """Split an ``Exec=`` value into arguments, dropping field codes; None if malformed.

    Per the desktop entry spec an argument is quoted whole or not at all, and inside double
    quotes a backslash escapes the next character. An argument of field codes only (``%f``)
    expands to nothing, not to an empty argument.
    """
    args: list[str] = []
    for m in _ARG.finditer(exec_line):
        if m["quoted"] is not None:
            args.append(re.sub(r"\\(.)", r"\1", m["quoted"]))
            continue
        if m["bare"] is None:
            return None  # a stray or unterminated quote
        kept: list[str] = []
        for piece in _PIECE.findall(m["bare"]):
            if piece == "%%" or not piece.startswith("%"):
                kept.append("%" if piece == "%%" else piece)
            elif piece[1:] not in _FIELD_CODES:
                return None  # the spec makes an unknown field code an error
        if kept:
            args.append("".join(kept))
    return args


def exec_program(exec_line: str) -> str | None:
    """The program an ``Exec=`` line starts, past any ``env VAR=value`` prefix."""
    args = exec_args(exec_line)
    if not args:
        return None
    if os.path.basename(args[0]) == "env":
        rest = iter(args[1:])
        for arg in rest:
            if arg == "-u":
                next(rest, None)  # its operand is a variable name
            elif arg.startswith("-") or ("=" in arg and "/" not in arg.partition("=")[0]):
                continue
            else:
                return arg
        return None
    return args[0]

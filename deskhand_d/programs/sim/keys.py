"""xdotool-style key names and chords, as ``press_key`` accepts them.

What this owns: splitting ``"super+shift+z"`` into modifiers and one key, the modifier aliases
(super/cmd/command/Super_L/Meta_L, ctrl/Control_L, alt/option/Alt_L, shift/Shift_L), the
keysym-to-character table for printable keys, and the named non-printing keys the simulated apps
understand. Parsing is pure; apps decide what a key does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

_MODIFIERS: Final = {
    "super": "cmd",
    "cmd": "cmd",
    "command": "cmd",
    "meta": "cmd",
    "super_l": "cmd",
    "super_r": "cmd",
    "meta_l": "cmd",
    "meta_r": "cmd",
    "ctrl": "ctrl",
    "control": "ctrl",
    "control_l": "ctrl",
    "control_r": "ctrl",
    "alt": "alt",
    "option": "alt",
    "opt": "alt",
    "alt_l": "alt",
    "alt_r": "alt",
    "shift": "shift",
    "shift_l": "shift",
    "shift_r": "shift",
}

_PRINTABLE: Final = {
    "space": " ",
    "plus": "+",
    "minus": "-",
    "period": ".",
    "comma": ",",
    "slash": "/",
    "backslash": "\\",
    "equal": "=",
    "asterisk": "*",
    "semicolon": ";",
    "colon": ":",
    "apostrophe": "'",
    "quotedbl": '"',
    "exclam": "!",
    "at": "@",
    "numbersign": "#",
    "dollar": "$",
    "percent": "%",
    "asciicircum": "^",
    "ampersand": "&",
    "parenleft": "(",
    "parenright": ")",
    "underscore": "_",
    "bracketleft": "[",
    "bracketright": "]",
    "braceleft": "{",
    "braceright": "}",
    "bar": "|",
    "less": "<",
    "greater": ">",
    "question": "?",
    "grave": "`",
    "asciitilde": "~",
    "kp_add": "+",
    "kp_subtract": "-",
    "kp_multiply": "*",
    "kp_divide": "/",
    "kp_decimal": ".",
    "kp_equal": "=",
    "kp_space": " ",
    **{f"kp_{d}": str(d) for d in range(10)},
}

#: Named keys that type nothing, by their canonical spelling.
NAMED: Final = {
    name.lower(): name
    for name in (
        "Return",
        "KP_Enter",
        "Tab",
        "BackSpace",
        "Escape",
        "Delete",
        "Left",
        "Right",
        "Up",
        "Down",
        "Home",
        "End",
        "Page_Up",
        "Page_Down",
        "Insert",
        "Caps_Lock",
        *(f"F{n}" for n in range(1, 21)),
    )
} | {
    "enter": "Return",
    "esc": "Escape",
    "backspace": "BackSpace",
    "prior": "Page_Up",
    "next": "Page_Down",
}


@dataclass(frozen=True, slots=True)
class Chord:
    """One key press: modifiers (subset of cmd/ctrl/alt/shift), a key name, and what it types."""

    modifiers: frozenset[str]
    name: str
    char: str | None

    @property
    def plain(self) -> bool:
        """No command-like modifier, so a printable key types its character."""
        return not (self.modifiers & {"cmd", "ctrl", "alt"})


def parse(spec: str) -> Chord | None:
    """Parse ``spec``; ``None`` when a part is not a key this simulator knows."""
    parts = spec.split("+")
    # "plus" spelled as a literal "+" at the end ("ctrl++") leaves an empty last part.
    if len(parts) > 1 and parts[-1] == "" and parts[-2] == "":
        parts = [*parts[:-2], "+"]
    if not parts or any(p == "" for p in parts):
        return None
    mods: set[str] = set()
    for part in parts[:-1]:
        mod = _MODIFIERS.get(part.lower())
        if mod is None:
            return None
        mods.add(mod)
    key = parts[-1]
    lower = key.lower()
    if lower in _MODIFIERS and len(parts) == 1:
        return Chord(frozenset(), key, None)
    if len(key) == 1:
        char = key.upper() if "shift" in mods and key.isalpha() else key
        return Chord(frozenset(mods), key, char)
    if lower in _PRINTABLE:
        return Chord(frozenset(mods), key, _PRINTABLE[lower])
    if lower in NAMED:
        return Chord(frozenset(mods), NAMED[lower], None)
    return None

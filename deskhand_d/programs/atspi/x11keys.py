"""Key names to X keysyms, finding keysyms in a keyboard mapping, pointer button names; no I/O.

This module owns the pure questions the X11 input code asks:

* What does a key spec such as ``Return``, ``ctrl+shift+t`` or ``KP_Add`` mean? Specs follow
  xdotool's naming (X keysym names joined by ``+``), plus case-insensitive aliases that people
  and models type out of habit (``enter``, ``esc``, ``pageup``, ``cmd``). A single character
  stands for itself, so ``é`` or ``€`` work even though their keysym names are obscure.
* Given the server's keyboard mapping (a table of keysyms per keycode), which keycode and
  shift level produce a keysym, and which keycodes are free to borrow for one that is missing?
* Which X button does a pointer button name (``left``) or a wheel direction (``down``) mean?

Keysym names come from python-xlib's keysym tables, which are plain Python data.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

NO_SYMBOL = 0

# Keysyms for code points outside Latin-1 are the code point plus this offset (X11 keysym
# encoding, appendix A of the protocol); Latin-1 printable characters are their own keysym.
_UNICODE_KEYSYM_OFFSET = 0x01000000

XK_RETURN = 0xFF0D
XK_TAB = 0xFF09
XK_SHIFT_L = 0xFFE1

# python-xlib keysym tables worth resolving names from. The rest (APL, 3270, scripts without
# a common keyboard here) can still be typed as single characters.
_KEYSYM_GROUPS = (
    "miscellany",
    "latin1",
    "latin2",
    "latin3",
    "latin4",
    "greek",
    "cyrillic",
    "technical",
    "special",
    "publishing",
    "xkb",
    "xf86",
)

# Lower-case spellings people use for common keys, mapped to the real keysym name. Anything
# not here is looked up as a keysym name, first exactly, then ignoring case.
_ALIASES = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "backspace": "BackSpace",
    "bs": "BackSpace",
    "del": "Delete",
    "ins": "Insert",
    "pageup": "Page_Up",
    "pgup": "Page_Up",
    "pagedown": "Page_Down",
    "pgdn": "Page_Down",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "spacebar": "space",
    "capslock": "Caps_Lock",
    "numlock": "Num_Lock",
    "scrolllock": "Scroll_Lock",
    "printscreen": "Print",
    "prtsc": "Print",
    "ctrl": "Control_L",
    "control": "Control_L",
    "alt": "Alt_L",
    "option": "Alt_L",
    "shift": "Shift_L",
    # "meta", "cmd" and friends all name the logo key: on macOS, where Sky's callers learned
    # their habits, Command is the shortcut modifier that Super plays on a Linux desktop.
    "super": "Super_L",
    "meta": "Super_L",
    "cmd": "Super_L",
    "command": "Super_L",
    "win": "Super_L",
    "windows": "Super_L",
}


class KeymapError(LookupError):
    """A keysym can't be produced with the keyboard mapping as it stands."""


@dataclass(frozen=True, slots=True)
class KeyChord:
    """A key to tap while other keys (usually modifiers) are held, as keysyms."""

    held: tuple[int, ...]
    key: int


@dataclass(frozen=True, slots=True)
class KeyLocation:
    """Where a keysym sits in a keyboard mapping: its keycode, and whether Shift is needed."""

    keycode: int
    shift: bool


@functools.cache
def _keysym_names() -> tuple[dict[str, int], dict[str, list[int]]]:
    """All known keysym names, exactly and folded to lower case."""
    exact: dict[str, int] = {}
    for group in _KEYSYM_GROUPS:
        module = importlib.import_module(f"Xlib.keysymdef.{group}")
        for attr, value in vars(module).items():
            if attr.startswith("XK_") and isinstance(value, int):
                name = attr[3:]
                exact.setdefault(name, value)
                if name.startswith("XF86_"):
                    # python-xlib spells these XF86_AudioMute; xdotool and xev say XF86AudioMute.
                    exact.setdefault("XF86" + name[5:], value)
    folded: dict[str, list[int]] = {}
    for name, value in exact.items():
        values = folded.setdefault(name.lower(), [])
        if value not in values:
            values.append(value)
    return exact, folded


def keysym_for_char(char: str) -> int:
    """The keysym that types one character; newline and tab become Return and Tab.

    Raises:
        ValueError: Not exactly one character, or a control character with no key.
    """
    if len(char) != 1:
        raise ValueError(f"expected one character, got {char!r}")
    if char in "\n\r":
        return XK_RETURN
    if char == "\t":
        return XK_TAB
    code = ord(char)
    if code < 0x20 or 0x7F <= code < 0xA0:
        raise ValueError(f"control character {char!r} has no key to type it with")
    if 0xD800 <= code < 0xE000:
        raise ValueError(f"lone surrogate {char!r} is not a character that can be typed")
    if code < 0x100:
        return code
    return _UNICODE_KEYSYM_OFFSET + code


def keysym_from_name(name: str) -> int:
    """Resolve one key name (keysym name, alias or single character) to a keysym.

    Raises:
        ValueError: The name is unknown or ambiguous; the message says which.
    """
    exact, folded = _keysym_names()
    if name in exact:
        return exact[name]
    alias = _ALIASES.get(name.lower())
    if alias is not None:
        return exact[alias]
    if len(name) == 1:
        return keysym_for_char(name)
    candidates = folded.get(name.lower(), [])
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        spellings = sorted(n for n, v in exact.items() if n.lower() == name.lower())
        raise ValueError(
            f"key name {name!r} is ambiguous when case is ignored; use one of {spellings}"
        )
    raise ValueError(
        f"unknown key name {name!r}: use an X keysym name such as Return, Escape, Tab, "
        "Page_Up, F5, KP_Add or a, a single character, or a modifier (ctrl, alt, shift, super)"
    )


def parse_key_spec(spec: str) -> KeyChord:
    """Parse ``Return``, ``ctrl+a`` or ``ctrl+shift+t`` into keysyms.

    ``+`` on its own, or as the last key (``ctrl++``), means the plus key itself.

    Raises:
        ValueError: Empty spec, an empty part (``ctrl++a``), spaces between keys, or an
            unknown key name.
    """
    text = spec.strip()
    if not text:
        raise ValueError("key spec is empty; give a key name such as Return or ctrl+c")
    if text == "+":
        parts = ["+"]
    elif text.endswith("++"):
        parts = [*text[:-2].split("+"), "+"]
    else:
        parts = text.split("+")
    names = [part.strip() for part in parts]
    if any(not name for name in names):
        raise ValueError(f"key spec {spec!r} has an empty key name between '+' signs")
    for name in names:
        if len(name) > 1 and any(c.isspace() for c in name):
            raise ValueError(
                f"key spec {spec!r} holds several keys separated by spaces; "
                "send one key or one '+' chord per call"
            )
    keysyms = [keysym_from_name(name) for name in names]
    return KeyChord(held=tuple(keysyms[:-1]), key=keysyms[-1])


class Keymap:
    """A snapshot of the server's core keyboard mapping, for lookups.

    ``rows[i]`` lists the keysyms of keycode ``first_keycode + i``; column 0 is the plain
    level and column 1 the shifted one (core protocol convention). Only those two columns
    are used: reaching the others needs Mode_switch or AltGr, whose keycodes differ from
    keyboard to keyboard, so a missing keysym is mapped onto a spare keycode instead.
    """

    def __init__(
        self,
        first_keycode: int,
        rows: Sequence[Sequence[int]],
        modifier_keycodes: Iterable[int] = (),
    ) -> None:
        self.first_keycode = first_keycode
        self.rows = [tuple(row) for row in rows]
        self.width = max((len(row) for row in self.rows), default=2)
        self._modifier_keycodes = frozenset(modifier_keycodes)
        self._where: dict[int, KeyLocation] = {}
        # Prefer the plain level everywhere, then the lowest keycode, like XKeysymToKeycode.
        for column in (0, 1):
            for index, row in enumerate(self.rows):
                if column < len(row) and row[column] != NO_SYMBOL:
                    location = KeyLocation(first_keycode + index, shift=column == 1)
                    self._where.setdefault(row[column], location)

    def locate(self, keysym: int) -> KeyLocation | None:
        """Where to press for this keysym, or None when no plain or shifted level has it."""
        return self._where.get(keysym)

    def codes_for(self, keysym: int) -> list[int]:
        """The keycodes to hold, in order, to produce ``keysym``: Shift first if needed.

        Raises:
            KeymapError: The keysym is not on a plain or shifted level, or it needs Shift
                and the keymap has no Shift_L.
        """
        location = self.locate(keysym)
        if location is None:
            raise KeymapError(f"keysym {keysym:#x} is not in the keymap")
        if not location.shift:
            return [location.keycode]
        shift = self.locate(XK_SHIFT_L)
        if shift is None or shift.shift:
            raise KeymapError("the keymap has no Shift_L key to reach a shifted keysym with")
        return [shift.keycode, location.keycode]

    def row(self, keycode: int) -> tuple[int, ...]:
        """The keysyms bound to a keycode (empty if it is out of range)."""
        index = keycode - self.first_keycode
        return self.rows[index] if 0 <= index < len(self.rows) else ()

    def spare_keycodes(self) -> list[int]:
        """Keycodes with no keysym at all and no modifier role, highest first.

        High keycodes are rarely on a physical keyboard, so borrowing them is least likely to
        clash with a key a person is pressing at the same time.
        """
        spare = [
            self.first_keycode + index
            for index, row in enumerate(self.rows)
            if not any(row) and self.first_keycode + index not in self._modifier_keycodes
        ]
        return spare[::-1]

    def temporary_row(self, keysym: int) -> list[int]:
        """A full-width row binding ``keysym`` on both the plain and the shifted level.

        Both levels, so the key types the same thing whether or not Shift or Caps Lock is
        down, and clients don't apply their own case conversion to it.
        """
        return [keysym, keysym] + [NO_SYMBOL] * (max(self.width, 2) - 2)

    def empty_row(self) -> list[int]:
        """A full-width row with no keysym, to give a borrowed keycode back."""
        return [NO_SYMBOL] * max(self.width, 2)


def chunks_by_spares(keysyms: Sequence[int], keymap: Keymap, capacity: int) -> Iterator[list[int]]:
    """Split keysyms into runs that each need at most ``capacity`` keysyms the keymap lacks.

    Each run can then be typed with one round of temporary bindings on spare keycodes.
    """
    chunk: list[int] = []
    missing: set[int] = set()
    for keysym in keysyms:
        if keymap.locate(keysym) is None and keysym not in missing:
            if len(missing) >= capacity and chunk:
                yield chunk
                chunk, missing = [], set()
            missing.add(keysym)
        chunk.append(keysym)
    if chunk:
        yield chunk


def rebind(
    bound: Mapping[int, int], spares: Sequence[int], needed: Iterable[int]
) -> dict[int, int]:
    """The changes (keycode -> keysym) that put every ``needed`` keysym on a spare keycode.

    ``bound`` maps the spare keycodes bound now to their keysyms. A needed keysym already bound
    stays where it is; the others take unbound spares first (in ``spares`` order), then the
    keycodes of bound keysyms that are not needed. A keycode in the result that is also in
    ``bound`` changes its meaning, so the app must have read the keys typed with it first.

    Raises:
        KeymapError: More keysyms are needed than there are spare keycodes.
    """
    wanted = list(dict.fromkeys(needed))
    placed = {keysym for keysym in bound.values() if keysym in wanted}
    free = [code for code in spares if code not in bound]
    free += [code for code in spares if code in bound and bound[code] not in wanted]
    missing = [keysym for keysym in wanted if keysym not in placed]
    if len(missing) > len(free):
        raise KeymapError(
            f"the keymap has {len(spares)} free keycodes but {len(wanted)} keys need one; "
            "type the text in smaller pieces"
        )
    return dict(zip(free, missing, strict=False))


def key_ids(keysyms: Sequence[int], keymap: Keymap) -> list[int]:
    """For each keysym, which key a person would press for it: its keycode when the keymap has
    it (so ``a`` and ``A``, or ``1`` and ``!``, are one key), else the negated keysym (a
    character the keymap lacks gets a spare keycode of its own while it is typed)."""
    ids = []
    for keysym in keysyms:
        location = keymap.locate(keysym)
        ids.append(location.keycode if location is not None else -keysym)
    return ids


def runs(keys: Sequence[int], limit: int, *, distinct: bool) -> Iterator[tuple[int, int]]:
    """Cut ``keys`` into consecutive runs of at most ``limit``, as ``(start, stop)`` slices.

    With ``distinct``, a run also ends before a key it already holds, so no key is pressed
    twice within one run: the run after it can then wait until the app is ready for that key
    again.
    """
    start = 0
    seen: set[int] = set()
    for at, key in enumerate(keys):
        if at - start >= limit or (distinct and key in seen):
            yield start, at
            start, seen = at, set()
        seen.add(key)
    if start < len(keys):
        yield start, len(keys)


_BUTTONS = {"left": 1, "middle": 2, "right": 3}
_WHEEL = {"up": 4, "down": 5, "left": 6, "right": 7}


def _named(table: dict[str, int], name: str, what: str) -> int:
    number = table.get(name.strip().lower())
    if number is None:
        raise ValueError(f"unknown {what} {name!r}; use one of {', '.join(table)}")
    return number


def pointer_button(name: str) -> int:
    """``left``, ``middle`` or ``right`` -> the X pointer button number."""
    return _named(_BUTTONS, name, "button")


def wheel_button(direction: str) -> int:
    """A scroll direction -> the X button a wheel notch in that direction sends."""
    return _named(_WHEEL, direction, "scroll direction")

"""Key specs to keysyms, and keysym lookups in a keyboard mapping, without an X server."""

from __future__ import annotations

import pytest

from deskhand_d.programs.atspi.x11keys import (
    KeyChord,
    KeyLocation,
    Keymap,
    KeymapError,
    chunks_by_spares,
    key_ids,
    keysym_for_char,
    keysym_from_name,
    parse_key_spec,
    rebind,
    runs,
)

# Keysym values from the X11 protocol's keysym tables.
CONTROL_L, SHIFT_L, ALT_L, SUPER_L = 0xFFE3, 0xFFE1, 0xFFE9, 0xFFEB
RETURN, ESCAPE, TAB, BACKSPACE, DELETE = 0xFF0D, 0xFF1B, 0xFF09, 0xFF08, 0xFFFF
HOME, END, PAGE_UP, PAGE_DOWN = 0xFF50, 0xFF57, 0xFF55, 0xFF56
UP, DOWN, LEFT, RIGHT = 0xFF52, 0xFF54, 0xFF51, 0xFF53
F1, F12, KP_ADD = 0xFFBE, 0xFFC9, 0xFFAB


@pytest.mark.parametrize(
    ("name", "keysym"),
    [
        ("Return", RETURN),
        ("Escape", ESCAPE),
        ("Tab", TAB),
        ("BackSpace", BACKSPACE),
        ("Delete", DELETE),
        ("Up", UP),
        ("Down", DOWN),
        ("Left", LEFT),
        ("Right", RIGHT),
        ("Home", HOME),
        ("End", END),
        ("Page_Up", PAGE_UP),
        ("Prior", PAGE_UP),
        ("Page_Down", PAGE_DOWN),
        ("Next", PAGE_DOWN),
        ("F1", F1),
        ("F12", F12),
        ("space", 0x20),
        ("KP_Add", KP_ADD),
        ("a", ord("a")),
        ("A", ord("A")),
        ("1", ord("1")),
        ("plus", ord("+")),
        ("minus", ord("-")),
        ("ISO_Left_Tab", 0xFE20),
        ("XF86AudioMute", 0x1008FF12),
        ("Greek_alpha", 0x7E1),
    ],
)
def test_keysym_names_resolve(name: str, keysym: int) -> None:
    """X keysym names, as xdotool spells them, resolve to their keysym."""
    assert keysym_from_name(name) == keysym


@pytest.mark.parametrize(
    ("name", "keysym"),
    [
        ("enter", RETURN),
        ("ENTER", RETURN),
        ("return", RETURN),
        ("esc", ESCAPE),
        ("escape", ESCAPE),
        ("backspace", BACKSPACE),
        ("del", DELETE),
        ("delete", DELETE),
        ("pageup", PAGE_UP),
        ("PageDown", PAGE_DOWN),
        ("page_up", PAGE_UP),
        ("tab", TAB),
        ("up", UP),
        ("f5", 0xFFC2),
        ("kp_add", KP_ADD),
        ("ctrl", CONTROL_L),
        ("Control", CONTROL_L),
        ("alt", ALT_L),
        ("shift", SHIFT_L),
        ("super", SUPER_L),
        ("meta", SUPER_L),
        ("cmd", SUPER_L),
    ],
)
def test_aliases_and_case_folding(name: str, keysym: int) -> None:
    """Common spellings and wrong case still find the key when that is unambiguous."""
    assert keysym_from_name(name) == keysym


@pytest.mark.parametrize(
    ("name", "keysym"),
    [("+", ord("+")), ("é", 0xE9), ("€", 0x010020AC), ("→", 0x01002192), ("😀", 0x0101F600)],
)
def test_single_characters_stand_for_themselves(name: str, keysym: int) -> None:
    """A lone character is its Latin-1 keysym, or the Unicode keysym beyond Latin-1."""
    assert keysym_from_name(name) == keysym


def test_case_sensitive_letters_keep_their_case() -> None:
    """Single letters are not folded: 'a' and 'A' are different keys to type."""
    assert keysym_from_name("a") != keysym_from_name("A")


def test_ambiguous_folded_name_is_an_error() -> None:
    """A name matching two keysyms only when case is ignored lists both spellings."""
    with pytest.raises(ValueError, match=r"ambiguous.*'Aacute'.*'aacute'"):
        keysym_from_name("AACUTE")


@pytest.mark.parametrize("name", ["Retrun", "ctrlx", "F99", "page up key"])
def test_unknown_names_are_rejected(name: str) -> None:
    """Misspelt names fail with a message quoting the name and giving examples."""
    with pytest.raises(ValueError, match="unknown key name") as info:
        keysym_from_name(name)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize(
    ("spec", "chord"),
    [
        ("Return", KeyChord((), RETURN)),
        ("ctrl+a", KeyChord((CONTROL_L,), ord("a"))),
        ("ctrl+shift+t", KeyChord((CONTROL_L, SHIFT_L), ord("t"))),
        ("control+alt+Delete", KeyChord((CONTROL_L, ALT_L), DELETE)),
        ("cmd+c", KeyChord((SUPER_L,), ord("c"))),
        (" ctrl + Page_Down ", KeyChord((CONTROL_L,), PAGE_DOWN)),
        ("+", KeyChord((), ord("+"))),
        ("ctrl++", KeyChord((CONTROL_L,), ord("+"))),
        ("ctrl+plus", KeyChord((CONTROL_L,), ord("+"))),
        ("shift", KeyChord((), SHIFT_L)),
    ],
)
def test_parse_key_spec(spec: str, chord: KeyChord) -> None:
    """'+' joins held keys to the tapped key; a trailing '++' means the plus key."""
    assert parse_key_spec(spec) == chord


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("ctrl++a", "empty key name"),
        ("+a", "empty key name"),
        ("ctrl+", "empty key name"),
        ("ctrl+a ctrl+c", "one key or one '\\+' chord per call"),
        ("ctrl+bogus", "unknown key name 'bogus'"),
    ],
)
def test_bad_specs_are_rejected(spec: str, message: str) -> None:
    """Malformed specs raise ValueError naming what is wrong."""
    with pytest.raises(ValueError, match=message):
        parse_key_spec(spec)


@pytest.mark.parametrize(
    ("char", "keysym"),
    [
        ("a", 0x61),
        ("~", 0x7E),
        ("\xa0", 0xA0),
        ("ÿ", 0xFF),
        ("\n", RETURN),
        ("\r", RETURN),
        ("\t", TAB),
        ("Ā", 0x01000100),
    ],
)
def test_keysym_for_char(char: str, keysym: int) -> None:
    """Characters map to keysyms by the X11 rule: Latin-1 as is, the rest offset."""
    assert keysym_for_char(char) == keysym


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x85", "\ud800", "ab", ""])
def test_untypeable_chars_are_rejected(char: str) -> None:
    """Control characters, lone surrogates and non-single strings are refused."""
    with pytest.raises(ValueError):
        keysym_for_char(char)


# A tiny mapping in core-protocol shape: keycode 8 onwards, two columns used.
ROWS = [
    [ord("a"), ord("A"), 0, 0],  # 8
    [0, 0, 0, 0],  # 9: free
    [SHIFT_L, 0, 0, 0],  # 10
    [ord("1"), ord("!"), 0, 0],  # 11
    [0, 0, 0, 0],  # 12: free but a modifier
    [0, 0, ord("@"), 0],  # 13: '@' only on the third column
    [ord("!"), 0, 0, 0],  # 14: '!' unshifted too
    [0, 0, 0, 0],  # 15: free
]


def test_locate_prefers_plain_level_then_lowest_keycode() -> None:
    """Shift is only used when no keycode has the keysym on its plain level."""
    keymap = Keymap(8, ROWS, modifier_keycodes=[10, 12])
    assert keymap.locate(ord("a")) == KeyLocation(8, shift=False)
    assert keymap.locate(ord("A")) == KeyLocation(8, shift=True)
    assert keymap.locate(ord("!")) == KeyLocation(14, shift=False)
    assert keymap.locate(SHIFT_L) == KeyLocation(10, shift=False)


def test_locate_ignores_columns_beyond_shift() -> None:
    """Keysyms reachable only through Mode_switch/AltGr count as missing."""
    assert Keymap(8, ROWS).locate(ord("@")) is None
    assert Keymap(8, ROWS).locate(0x20AC) is None


def test_spare_keycodes_are_empty_non_modifiers_highest_first() -> None:
    """Only keycodes with no keysym and no modifier role may be borrowed."""
    assert Keymap(8, ROWS, modifier_keycodes=[10, 12]).spare_keycodes() == [15, 9]


def test_rows_for_borrowing_and_returning_a_keycode() -> None:
    """A temporary row binds both levels at the mapping's width; the empty row clears it."""
    keymap = Keymap(8, ROWS)
    assert keymap.temporary_row(0x20AC) == [0x20AC, 0x20AC, 0, 0]
    assert keymap.empty_row() == [0, 0, 0, 0]
    assert keymap.row(9) == (0, 0, 0, 0)
    assert keymap.row(99) == ()


def test_codes_for_adds_shift_when_the_level_needs_it() -> None:
    """Plain keysyms are one keycode; shifted ones are Shift_L's keycode, then the key."""
    keymap = Keymap(8, ROWS)
    assert keymap.codes_for(ord("a")) == [8]
    assert keymap.codes_for(ord("A")) == [10, 8]


def test_codes_for_missing_keysyms_and_missing_shift() -> None:
    """Keysyms not in the map, or shifted ones without a Shift_L, raise KeymapError."""
    with pytest.raises(KeymapError, match="not in the keymap"):
        Keymap(8, ROWS).codes_for(0x20AC)
    no_shift = [row if row[0] != SHIFT_L else [0, 0, 0, 0] for row in ROWS]
    with pytest.raises(KeymapError, match="Shift_L"):
        Keymap(8, no_shift).codes_for(ord("A"))


def test_chunks_by_spares_limits_missing_keysyms_per_chunk() -> None:
    """Text is cut so each piece needs at most `capacity` keysyms the keymap lacks."""
    keymap = Keymap(8, ROWS)
    a, x, y, z = ord("a"), 0x1000001, 0x1000002, 0x1000003
    assert list(chunks_by_spares([a, x, a, x, y, a, z, x], keymap, 2)) == [
        [a, x, a, x, y, a],
        [z, x],
    ]
    assert list(chunks_by_spares([a, a], keymap, 1)) == [[a, a]]
    assert list(chunks_by_spares([], keymap, 1)) == []
    assert list(chunks_by_spares([x, y], keymap, 1)) == [[x], [y]]


def test_rebind_keeps_what_is_needed_and_takes_free_spares_first() -> None:
    """A keysym already on a spare keycode stays there; a new one takes a free spare before
    a keycode whose keysym is no longer needed (whose meaning would change)."""
    x, y, z = 0x1000001, 0x1000002, 0x1000003
    assert rebind({}, [15, 9], [x, y, x]) == {15: x, 9: y}
    assert rebind({15: x}, [15, 9], [x, y]) == {9: y}
    assert rebind({15: x, 9: y}, [15, 9], [y, z]) == {15: z}
    assert rebind({15: x}, [15, 9], [x]) == {}
    with pytest.raises(KeymapError, match="2 free keycodes but 3 keys need one"):
        rebind({}, [15, 9], [x, y, z])


def test_key_ids_name_the_key_pressed() -> None:
    """Keysyms on one keycode are one key, Shift or not ('a' and 'A'); a keysym is found where
    the keymap puts it ('!' unshifted on 14 before shifted on 11); a foreign keysym is a key
    of its own."""
    keymap = Keymap(8, ROWS)
    euro = 0x10020AC
    keysyms = [ord("a"), ord("A"), ord("1"), ord("!"), euro]
    assert key_ids(keysyms, keymap) == [8, 8, 11, 14, -euro]


@pytest.mark.parametrize(
    ("keys", "limit", "distinct", "expected"),
    [
        ([1, 2, 3, 1], 64, True, [(0, 3), (3, 4)]),  # "12+1": the second 1 waits
        ([1, 2, 3, 1], 64, False, [(0, 4)]),
        ([1, 1, 1], 64, True, [(0, 1), (1, 2), (2, 3)]),
        ([1, 2, 3, 4, 5], 2, False, [(0, 2), (2, 4), (4, 5)]),
        ([1, 2, 1, 2], 3, True, [(0, 2), (2, 4)]),
        ([], 64, True, []),
    ],
)
def test_runs_cut_by_length_and_repeated_keys(
    keys: list[int], limit: int, distinct: bool, expected: list[tuple[int, int]]
) -> None:
    """Runs are at most `limit` long and, when distinct, never hold a key twice."""
    assert list(runs(keys, limit, distinct=distinct)) == expected


def test_pointer_and_wheel_button_names() -> None:
    from deskhand_d.programs.atspi.x11keys import pointer_button, wheel_button

    assert [pointer_button(n) for n in ("left", "Middle", " right ")] == [1, 2, 3]
    assert [wheel_button(d) for d in ("up", "down", "left", "right")] == [4, 5, 6, 7]
    with pytest.raises(ValueError, match="unknown button 'back'"):
        pointer_button("back")
    with pytest.raises(ValueError, match="unknown scroll direction 'sideways'"):
        wheel_button("sideways")

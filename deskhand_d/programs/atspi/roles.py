"""AT-SPI roles and states in Sky's vocabulary. Pure.

What this owns: the table from the numeric AT-SPI role (``Accessible.GetRole``; never the role
*name*, which differs between toolkits: GTK 4 says ``button`` and ``text box`` where libatspi
says ``push button`` and ``text``) to the role words Sky prints, the state bits Deskhand reads,
which action an element's click performs, and the GTK quirks that change what an element is
called (GTK 4.8's doubled button names, GTK 4's widget type names standing in for missing
names).

Role words are Sky's own (``standard window``, ``button``, ``text field``, ``scroll area``…)
wherever macOS has an equivalent, so a client parses a Linux tree exactly like a Mac one; the
rest are single words, which any Sky-grammar parser takes as an unknown role.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Final


class Role(enum.IntEnum):
    """The AT-SPI role numbers Deskhand treats specially (``AtspiRole``)."""

    INVALID = 0
    CHECK_BOX = 7
    CHECK_MENU_ITEM = 8
    COMBO_BOX = 11
    DIALOG = 16
    FILLER = 20
    FRAME = 23
    IMAGE = 27
    LABEL = 29
    LIST = 31
    LIST_ITEM = 32
    MENU = 33
    MENU_BAR = 34
    MENU_ITEM = 35
    PAGE_TAB = 37
    PANEL = 39
    PASSWORD_TEXT = 40
    PROGRESS_BAR = 42
    POPUP_MENU = 41
    PUSH_BUTTON = 43
    RADIO_BUTTON = 44
    RADIO_MENU_ITEM = 45
    SCROLL_BAR = 48
    SCROLL_PANE = 49
    SLIDER = 51
    SPIN_BUTTON = 52
    TABLE = 55
    TABLE_CELL = 56
    TEXT = 61
    TOGGLE_BUTTON = 62
    WINDOW = 69
    APPLICATION = 75
    ENTRY = 79
    LINK = 88
    TABLE_ROW = 90
    TREE_ITEM = 91
    LEVEL_BAR = 103
    STATIC = 116
    PUSH_BUTTON_MENU = 129
    SWITCH = 130


class State(enum.IntEnum):
    """Bit numbers in the 64-bit state set ``Accessible.GetState`` returns as two uint32."""

    ACTIVE = 1
    CHECKED = 4
    COLLAPSED = 5
    DEFUNCT = 6
    EDITABLE = 7
    ENABLED = 8
    EXPANDABLE = 9
    EXPANDED = 10
    FOCUSED = 12
    HORIZONTAL = 14
    MODAL = 16
    MULTI_LINE = 17
    PRESSED = 20
    SELECTABLE = 22
    SELECTED = 23
    SENSITIVE = 24
    SHOWING = 25
    SINGLE_LINE = 26
    VERTICAL = 29
    VISIBLE = 30
    MANAGES_DESCENDANTS = 31
    SELECTABLE_TEXT = 38
    CHECKABLE = 41
    READ_ONLY = 43


def states_from_words(words: Sequence[int]) -> int:
    """The state set as one integer (bit ``i`` = AT-SPI state ``i``) from GetState's ``au``."""
    value = 0
    for shift, word in enumerate(words[:2]):
        value |= (int(word) & 0xFFFFFFFF) << (32 * shift)
    return value


def has(states: int, state: State) -> bool:
    return bool(states >> state & 1)


def bits(*states: State) -> int:
    """The integer state set holding exactly ``states`` (for tests and fixtures)."""
    value = 0
    for state in states:
        value |= 1 << state
    return value


_WORDS: Final[dict[int, str]] = {
    0: "unknown",
    1: "text",  # accelerator label
    2: "alert",
    3: "image",  # animation
    4: "image",  # arrow
    5: "calendar",
    6: "canvas",
    7: "checkbox",
    8: "menu item",  # check menu item
    9: "dialog",  # colour chooser
    10: "cell",  # column header
    11: "pop up button",  # combo box
    12: "date time area",
    13: "image",  # desktop icon
    14: "container",  # desktop frame
    15: "slider",  # dial
    16: "dialog",
    17: "container",  # directory pane
    18: "canvas",  # drawing area
    19: "dialog",  # file chooser
    20: "container",  # filler
    21: "container",  # focus traversable
    22: "dialog",  # font chooser
    23: "standard window",  # frame
    24: "container",  # glass pane
    25: "HTML content",  # html container
    26: "image",  # icon
    27: "image",
    28: "container",  # internal frame
    29: "text",  # label: static text, as Sky prints it
    30: "container",  # layered pane
    31: "list",
    32: "row",  # list item
    33: "menu",
    34: "menu bar",
    35: "menu item",
    36: "container",  # option pane
    37: "tab",  # page tab
    38: "tab group",  # page tab list
    39: "container",  # panel
    40: "text field",  # password text
    41: "menu",  # popup menu
    42: "progress indicator",
    43: "button",  # push button
    44: "radio button",
    45: "menu item",  # radio menu item
    46: "container",  # root pane
    47: "cell",  # row header
    48: "scroll bar",
    49: "scroll area",  # scroll pane
    50: "separator",
    51: "slider",
    52: "stepper",  # spin button
    53: "split group",  # split pane
    54: "group",  # status bar
    55: "table",
    56: "cell",  # table cell
    57: "cell",  # table column header
    58: "cell",  # table row header
    59: "menu item",  # tear-off menu item
    60: "text entry area",  # terminal
    61: "text",  # refined by text_role()
    62: "toggle button",
    63: "toolbar",
    64: "tooltip",
    65: "outline",  # tree
    66: "outline",  # tree table
    67: "unknown",
    68: "container",  # viewport
    69: "window",
    70: "unknown",  # extended
    71: "group",  # header
    72: "group",  # footer
    73: "text",  # paragraph
    74: "ruler",
    75: "application",
    76: "combo box",  # autocomplete
    77: "text field",  # edit bar
    78: "container",  # embedded
    79: "text field",  # entry
    80: "image",  # chart
    81: "text",  # caption
    82: "document",  # document frame
    83: "heading",
    84: "group",  # page
    85: "section",
    86: "container",  # redundant object
    87: "form",
    88: "link",
    89: "window",  # input method window
    90: "row",  # table row
    91: "row",  # tree item
    92: "document",  # spreadsheet
    93: "document",  # presentation
    94: "document",  # text document
    95: "HTML content",  # web document
    96: "document",  # e-mail
    97: "text",  # comment
    98: "list",  # list box
    99: "group",  # grouping
    100: "image",  # image map
    101: "alert",  # notification
    102: "group",  # info bar
    103: "level indicator",  # level bar
    104: "group",  # title bar
    105: "group",  # block quote
    106: "audio",
    107: "video",
    108: "definition",
    109: "article",
    110: "landmark",
    111: "log",
    112: "marquee",
    113: "math",
    114: "rating",
    115: "timer",
    116: "text",  # static
    117: "math",  # fraction
    118: "math",  # root
    119: "text",  # subscript
    120: "text",  # superscript
    121: "list",  # description list
    122: "text",  # description term
    123: "text",  # description value
    124: "text",  # footnote
    125: "text",  # content deletion
    126: "text",  # content insertion
    127: "text",  # mark
    128: "text",  # suggestion
    129: "menu button",  # push button menu
    130: "switch",  # added after at-spi2-core 2.46 (there: "last defined")
}

#: Every role word :func:`role_words` can print.
ALL_WORDS: Final = frozenset(
    {*_WORDS.values(), "menu bar item", "text field", "text entry area", "text"}
)
#: Table, tree and list cells (GTK 3 gives them the same actions whatever they can do).
_CELL_ROLES: Final = frozenset({56, 57, 58, 10, 47, 32, 91, 90})
#: Roles whose checked state Sky shows as ``Value: 1`` / ``Value: 0``.
CHECKABLE_ROLES: Final = frozenset(
    {
        Role.CHECK_BOX,
        Role.CHECK_MENU_ITEM,
        Role.RADIO_BUTTON,
        Role.RADIO_MENU_ITEM,
        Role.SWITCH,
    }
)
#: Roles whose Value interface a client may set (others, like progress bars, only report).
SETTABLE_VALUE_ROLES: Final = frozenset(
    {Role.SCROLL_BAR, Role.SLIDER, Role.SPIN_BUTTON, 15}  # 15: dial
)
#: Roles that can be a window's root.
WINDOW_ROLES: Final = frozenset({Role.FRAME, Role.DIALOG, Role.WINDOW, 2, 28, 89})


#: Roles whose children are the items of an open menu.
MENU_PARENTS: Final = frozenset({Role.MENU_BAR, Role.MENU, Role.POPUP_MENU})


def role_words(role: int, states: int = 0, *, parent_role: int = -1) -> str:
    """What Sky would print for an element with this AT-SPI role, states and parent role.

    GTK 3 gives a menu's title and its items one object with the role ``menu`` (Qt and GTK 4
    the role ``menu item``): in a menu bar it is a ``menu bar item`` (macOS's word for a menu
    title, which a click opens), inside another menu a ``menu item`` (the item that opens a
    submenu, as on macOS). Text objects depend on whether they are editable and single-line.
    """
    if role in (Role.MENU, Role.MENU_ITEM) and parent_role == Role.MENU_BAR:
        return "menu bar item"  # Qt and GTK 4 give a menu title the item role
    if role == Role.MENU and parent_role in MENU_PARENTS:
        return "menu item"
    if role == Role.TEXT:
        return text_role(states)
    return _WORDS.get(role, "unknown")


def text_role(states: int) -> str:
    """``text field`` (editable, one line), ``text entry area`` (editable) or ``text``."""
    if not has(states, State.EDITABLE) or has(states, State.READ_ONLY):
        return "text"
    if has(states, State.SINGLE_LINE) and not has(states, State.MULTI_LINE):
        return "text field"
    return "text entry area"


# --- what a click does --------------------------------------------------------------------

#: Action names (case-insensitive, after the last ``.``) that mean "press this element";
#: browsers name a check box's and a tab's by what pressing does (``check``, ``uncheck``,
#: ``switch``).
PRESS_ACTIONS: Final = (
    "click",
    "press",
    "activate",
    "toggle",
    "jump",
    "check",
    "uncheck",
    "switch",
)


def action_names(listed: Sequence[Sequence[str]]) -> tuple[str, ...] | None:
    """The action names from ``Action.GetActions``' ``(name, description, key binding)``
    triples, or None when they cannot be trusted and must be read one by one
    (``Action.GetName``). Pure.

    Firefox's ATK bridge answers every field of every triple with the key binding (``";;"``
    three times for a button that presses), so an action named exactly like its key binding,
    or not named at all, is read again by its index."""
    names = tuple(str(a[0]) for a in listed)
    for triple in listed:
        name, binding = str(triple[0]), str(triple[2]) if len(triple) > 2 else ""
        if not name or (binding and name == binding):
            return None
    return names


def primary_action(names: Sequence[str]) -> int | None:
    """Which action a click by index performs: the first press-like one, else None.

    GTK 3 and GTK 4 buttons say ``click``; entries ``activate``; links ``jump``; a browser's
    check box ``check`` or ``uncheck`` and its tabs ``switch``. Elements
    whose actions are all something else (a GTK 4 label's ``clipboard.copy`` …) have no
    primary action: clicking them clicks their centre instead.
    """
    for wanted in PRESS_ACTIONS:
        for i, name in enumerate(names):
            if name.rsplit(".", 1)[-1].casefold() == wanted:
                return i
    return None


# GTK 4 gives every label the actions of its context menu; a label whose text cannot be
# selected never shows that menu, so those actions do nothing there and are not listed.
_LABEL_MENU_PREFIXES: Final = ("clipboard.", "selection.", "link.", "menu.popup")


# GTK 3 gives every list and tree cell these actions; they do something only on a row that
# can expand, or a cell that can be edited.
_CELL_ACTIONS: Final = {"expand or contract": State.EXPANDABLE, "edit": State.EDITABLE}


def secondary_actions(names: Sequence[str], role: int = -1, states: int = 0) -> tuple[str, ...]:
    """The action names listed as ``Secondary Actions``: all but the primary one (and, on a
    label whose text is not selectable, none of GTK's label-menu actions; on a table cell,
    neither expanding a row that cannot expand nor editing a cell that cannot be edited)."""
    primary = primary_action(names)
    inert = role == Role.LABEL and not has(states, State.SELECTABLE_TEXT)

    def useless(name: str) -> bool:
        if inert and name.startswith(_LABEL_MENU_PREFIXES):
            return True
        needs = _CELL_ACTIONS.get(name.casefold()) if role in _CELL_ROLES else None
        return needs is not None and not has(states, needs)

    return tuple(n for i, n in enumerate(names) if i != primary and n and not useless(n))


# --- names ----------------------------------------------------------------------------------

# GTK 4 falls back to the widget's type name (GtkButton, AdwGizmo…) when nothing names it.
_TYPE_NAME: Final = re.compile(r"(?:Gtk|Adw|Gdk|Gsk|Vte|GtkSource)[A-Z][A-Za-z0-9]*")


def is_type_name(name: str) -> bool:
    return _TYPE_NAME.fullmatch(name) is not None


def undoubled(name: str, child_names: Sequence[str]) -> str:
    """GTK 4.8 names a labelled button ``"6 6"`` (its own label, then its child's): ``"6"``.

    Only when the name is exactly two equal halves joined by one space and a child carries
    that half as its name, so a button really called ``"Go Go"`` keeps its name unless a
    child says ``"Go"``.
    """
    half, rest = divmod(len(name), 2)
    if rest and half and name[half] == " ":
        first, second = name[:half], name[half + 1 :]
        if first == second and first in child_names:
            return first
    # GTK 4 puts the label with its mnemonic first: "Save _As… Save As…", "_Retry Retry".
    for child in child_names:
        if child and name.endswith(" " + child):
            first = name[: -len(child) - 1]
            if "_" in first and first.replace("_", "") == child:
                return child
    return name


#: U+FFFC OBJECT REPLACEMENT CHARACTER: where a hypertext (a web page's paragraph, a dialog's
#: text in Firefox) holds an embedded child object, its text has this character instead.
EMBEDDED_OBJECT: Final = "\ufffc"
_EMBEDS: Final = re.compile("[ \t]*\ufffc+[ \t]*")


def without_embeds(text: str) -> str:
    """``text`` without the characters that stand for embedded child objects. Pure.

    The children are elements of the tree in their own right, listed right below; the
    placeholders are not text a person sees. A run of them between words leaves one space,
    and text made of nothing else becomes empty."""
    if EMBEDDED_OBJECT not in text:
        return text
    return _EMBEDS.sub(" ", text).strip(" \t")


def display_name(name: str, child_names: Sequence[str] = ()) -> str:
    """The label Sky would print for an element called ``name``.

    Surrounding white space goes: GTK 3 pads menu item names with spaces where the shortcut
    column would be (``"New      "``); so do the characters that stand for embedded objects."""
    name = without_embeds(name).strip()
    if is_type_name(name):
        return ""
    return undoubled(name, child_names)

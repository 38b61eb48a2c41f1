"""The shortcuts the faster parser and candidate ranking take give the same answers as the rules.

Each case here sits next to a shortcut: attributes found by one split, the per-call memo of
element texts, the joined-label scoring (and its fallback when ``lower()`` changes a length), the
single ``(disabled)`` search, and the stable sort that stands in for ranking by index.
"""

from __future__ import annotations

from deskhand_d.jev import ax
from deskhand_d.jev.types import Element


def one(rest: str) -> Element:
    return ax.parse(f"0 {rest}").elements[0]


def test_an_empty_value_right_before_the_next_key() -> None:
    """``Value:`` opening the attributes with only ``, ID: …`` after it is an empty value; after
    a title, ``, Help:`` without whitespace after the colon stays part of the title."""
    e = one("text Value:, ID: y")
    assert (e.label, e.attributes) == ("Value:, ID: y", {"Value": "", "ID": "y"})
    e = one("link Title, Help:, Secondary Actions: Open")
    assert (e.label, e.attributes, e.secondary_actions) == ("Title, Help:", {}, ("Open",))


def test_whitespace_after_a_key_is_taken_once() -> None:
    """Exactly one whitespace character (a space, a tab, a newline) follows the colon."""
    assert one("text Value:  two spaces").attributes == {"Value": " two spaces"}
    assert one("text Value:\tx, ID:\ny").attributes == {"Value": "x", "ID": "y"}


def test_repeated_element_texts_get_their_own_attribute_dicts() -> None:
    """Equal texts are parsed once per call, but every element owns its attributes."""
    tree = ax.parse("0 window W\n\t1 link A, Value: x\n\t2 link A, Value: x\n\t3 link A, Value: x")
    first, second, third = tree.elements[1:]
    assert first.attributes == second.attributes == third.attributes == {"Value": "x"}
    assert first.attributes is not second.attributes is not third.attributes
    first.attributes["Value"] = "changed"
    assert second.attributes == third.attributes == {"Value": "x"}
    again = ax.parse("0 window W\n\t1 link A, Value: x")
    assert again.elements[1].attributes == {"Value": "x"}


def test_menu_bar_children_sharing_text_with_other_elements() -> None:
    """A menu title with the same text as an element outside the menu keeps its own reading."""
    text = "0 window W\n\t1 button Edit\n\t2 menu bar\n\t\t3 button Edit\n\t4 button Edit"
    roles = [(e.role, e.label) for e in ax.parse(text).elements]
    assert roles == [
        ("window", "W"),
        ("button", "Edit"),
        ("menu bar", ""),
        ("", "button Edit"),
        ("button", "Edit"),
    ]


def scores(elements: list[Element], goal: str = "") -> list[tuple[int, int]]:
    tree = ax.Tree(tuple(elements), None, "", None, "", "")
    return [(c.element.index, c.score) for c in ax.select_candidates(tree, goal).candidates]


def element(index: int, role: str, label: str, raw: str = "") -> Element:
    return Element(index=index, depth=0, role=role, source_role=role, label=label, raw=raw)


def test_labels_whose_lowering_grows() -> None:
    """``İ`` lowers to two characters; scoring still matches each label on its own."""
    elements = [
        element(0, "button", "İstanbul month"),
        element(1, "button", "Previous MONTH"),
        element(2, "button", "ΣΑΣ 搜索"),
        element(3, "link", "month"),
    ]
    assert scores(elements, "month") == [(1, 3 + 4 + 6), (2, 3 + 6), (0, 3 + 4), (3, 1 + 4)]
    assert scores(elements, "搜索 month")[:2] == [(1, 3 + 4 + 6), (2, 3 + 4 + 6)]


def test_goal_words_count_once_per_label_but_per_repeat_in_the_goal() -> None:
    elements = [element(0, "button", "to to to"), element(1, "button", "today")]
    assert scores(elements, "to") == [(0, 7), (1, 7)]
    assert scores(elements, "to to") == [(0, 11), (1, 11)]


def test_disabled_anywhere_in_the_raw_text() -> None:
    """``(disabled)`` in any case anywhere in an element's raw text rules it out."""
    elements = [
        element(0, "button", "A", raw="0 button A"),
        element(1, "button", "B", raw="1 button B (DisAbled)"),
        element(2, "button", "C", raw="2 button C (disabled"),
        element(3, "button", "D", raw="3 button D\n(disabled)"),
    ]
    assert scores(elements) == [(0, 3), (2, 3)]


def test_ranking_of_a_hand_built_tree_out_of_index_order() -> None:
    """Ties go by index, then by position, whatever the order of the elements."""
    elements = [
        element(9, "button", "a"),
        element(2, "button", "b"),
        element(5, "link", "c"),
        element(2, "button", "d"),
        element(1, "button", ""),
    ]
    ranked = ax.select_candidates(ax.Tree(tuple(elements), None, "", None, "", ""), "").candidates
    assert [(c.element.index, c.element.label, c.score) for c in ranked] == [
        (2, "b", 3),
        (2, "d", 3),
        (9, "a", 3),
        (5, "c", 1),
        (1, "", -1),
    ]

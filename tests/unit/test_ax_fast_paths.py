"""The shortcuts the faster parser and candidate ranking take give the same answers as the rules.

Each case here sits next to a shortcut: the split that reads a whole tree without walking its
lines (and when it hands over to the walk), roles from the first word alone, elements read on
demand, candidates whose element is read when asked for, the daemon's facts from the same
reading, attributes found by one split, the per-tree memo of element texts, the joined-label
scoring (as bytes when the text is not ASCII, per label when a character lowers into ASCII),
the single ``(disabled)`` search, and the stable sort that stands in for ranking by index.
The random trees of ``test_ax_property.py`` check the same shortcuts against the rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deskhand_d import ax
from deskhand_d.ax import Element, layout
from deskhand_d.ax.roles import role_of, word_role

AX_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "ax"


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


# ----- reading a tree -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("calculator-wangdada-1.txt", True),
        ("calendar-wangdada-1.txt", True),
        ("netease-wangdada-1.txt", True),  # values whose lines start with spaces
        ("safari-zh-isse-zhengzixuan-1.txt", True),  # an instructions block, code in values
        ("music-v750-tooldump-1.txt", False),  # a value line shaped like element 1
    ],
)
def test_the_split_reads_what_the_walk_reads(name: str, split: bool) -> None:
    """Real captures: the split is taken where it applies and reads what the walk reads."""
    text = (AX_DIR / name).read_text(encoding="utf-8")
    fast, walked = layout.read(text), layout.read_by_lines(text)
    assert fast.split is split and not walked.split
    size = len(walked)
    assert list(fast.indices) == list(walked.indices) and size
    assert [fast.raw(at) for at in range(size)] == [walked.raw(at) for at in range(size)]
    assert [fast.rest(at) for at in range(size)] == [walked.rest(at) for at in range(size)]
    assert list(fast.depths()) == list(walked.depths())
    assert fast.focus == walked.focus


@pytest.mark.parametrize(
    "text",
    [
        "0 window W\n\t1 button A\n\t 2 button B",  # an element line indented with a space
        "0 window W\n\t01 button A",  # a leading zero
        "0 window W\n\t1 text a\n2 b\n\t2 button B",  # a value line shaped like element 2
        "0 window W\n\t1 button A\n\t5 button B",  # sparse numbering
        "0 window W\n\t1 button A\nThe focused UI element is 1\n\t2 button B",
        "0 window W\n\t1 text a\n\nSelected text: 2 x\n\t2 button B",
        "3 window W\n\t4 text a\n5",  # numbered from 3, a bare number last
    ],
)
def test_texts_the_split_hands_to_the_walk_or_reads_the_same(text: str) -> None:
    fast, walked = layout.read(text), layout.read_by_lines(text)
    assert list(fast.indices) == list(walked.indices)
    assert [fast.raw(at) for at in range(len(fast))] == [
        walked.raw(at) for at in range(len(walked))
    ]
    assert fast.focus == walked.focus


def test_elements_are_read_on_demand() -> None:
    """A parsed tree reads one element, or its roles, without reading the others."""
    text = (AX_DIR / "calendar-wangdada-1.txt").read_text(encoding="utf-8")
    lazy, whole = ax.parse(text), ax.parse(text).elements
    assert not lazy.elements_read and len(lazy) == len(whole)
    assert lazy.roles() == [e.role for e in whole]
    assert lazy.element_at(5) == whole[5] and ax.find(lazy, 21) == whole[21]
    assert not lazy.elements_read
    assert lazy.elements == whole and lazy.elements_read


def test_roles_from_the_first_word() -> None:
    """Where the first word settles a role, it is the role the whole text gives."""
    for word, rest in [
        ("列表刻度", "列表刻度 5"),
        ("AXWebArea", "AXWebArea x"),
        ("Calendar,", "Calendar, Value: y"),
        ("(selected)", "(selected) x"),
        ("Description:", "Description: x"),
        ("outline", "outline\nsecond line"),
    ]:
        assert word_role(word) == role_of(rest)[0], word
    # words a multi-word role starts with, and "Secondary", need the rest of the text
    assert word_role("text") is None and word_role("Secondary") is None
    assert word_role("") is None and word_role("button\t") is None


def test_candidates_read_their_element_when_asked() -> None:
    """Index, role and label are at hand; the element, read on demand, is the parsed one."""
    text = (AX_DIR / "calendar-wangdada-1.txt").read_text(encoding="utf-8")
    tree = ax.parse(text)
    first = ax.select_candidates(tree, "previous month").candidates[0]
    assert (first.index, first.role, first.label) == (
        first.element.index,
        first.element.role,
        first.element.label,
    )
    assert first.element == ax.parse(text).elements[first.index]
    assert first == ax.Candidate(element=first.element, score=first.score)
    assert "score=" in repr(first) and first != object()


# ----- the daemon's facts ---------------------------------------------------------------------

HEAD = 'App=com.example.app (pid 7)\nWindow: "W", App: Example.\n'


@pytest.mark.parametrize(
    ("text", "indices", "identity", "pid", "complete"),
    [
        (HEAD + "0 window W\n\t1 button A", {0, 1}, "com.example.app", 7, True),
        ("App=com.example.app\nWindow: W\n0 window W", {0}, "", None, False),  # no pid
        ("Window: W\n0 window W", {0}, "", None, False),  # no App= line
        (HEAD.split("\n")[0] + "\n0 window W", {0}, "com.example.app", 7, False),  # no Window:
        (HEAD + "1 window W\n\t2 button A", {1, 2}, "com.example.app", 7, False),  # not from 0
        (HEAD + "0 window W\n\t1 b\n" + ax.RECEIPT, {0, 1}, "com.example.app", 7, False),
        (
            HEAD + "Updated elements:\n~0 window W",  # a diff keeps its pid, names no index
            set(),
            "com.example.app",
            7,
            False,
        ),
    ],
)
def test_the_daemons_facts(
    text: str, indices: set[int], identity: str, pid: int | None, complete: bool
) -> None:
    facts = ax.inspect(text)
    assert facts.indices == frozenset(indices)
    assert (facts.identity, facts.pid, facts.complete) == (identity, pid, complete)

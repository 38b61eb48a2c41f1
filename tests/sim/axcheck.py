"""A test-side checker of Sky's AX text grammar (spec §5.2, §5.3, §6.1), strict on purpose.

``check_state`` takes a ``get_app_state`` text, ``check_action`` an action result; both return
the parsed tree (elements with index, depth and full text, continuation lines folded in) and
raise ``AssertionError`` naming the first rule broken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BANNER = re.compile(r"^Computer Use state \(CUA App Version: \d+\)$")
PATH_IDENTITY = re.compile(r"^App=(/[^ ]+\.app)/ \(bundleID ([\w.]+), pid (\d+)\)$")
SHORT_IDENTITY = re.compile(r"^App=([\w.]+) \(pid (\d+)\)$")
WINDOW = re.compile(r'^Window: "(.*)", App: (.+)\.$')
ELEMENT = re.compile(r"^(\t*)(\d+) (.*)$")
FLAGS = {"disabled", "settable", "float", "string", "integer", "selectable", "selected",
         "expanded", "collapsed"}  # fmt: skip
KEYS = ("Description", "Value", "Details", "Help", "ID", "URL", "Placeholder", "Secondary Actions")
FOCUS = "The focused UI element is "
NOTE = (
    "Note: Pay special attention to the content selected by the user. If the user asks a question "
    "or refers to the content they are looking at on-screen, they might be referring to the "
    "selected content (but they might be referring to something else that's visible, too)."
)


@dataclass
class Node:
    index: int
    depth: int
    text: str  # the element line after "<index> ", continuation lines joined with "\n"


@dataclass
class Tree:
    identity: str
    title: str
    app_name: str
    nodes: list[Node] = field(default_factory=list)
    focus: str | None = None
    selected: str | None = None

    def find(self, needle: str) -> Node:
        for node in self.nodes:
            if needle in node.text:
                return node
        raise AssertionError(f"{needle!r} not in tree")


def _check_line(node: Node) -> None:
    text = node.text
    flags = re.search(r"\(([a-z, ]+)\)", text.split(",")[0])
    if flags:
        for flag in flags.group(1).split(", "):
            assert flag in FLAGS, f"unknown flag {flag!r} in {text!r}"
    positions = []
    for key in KEYS:
        m = re.search(rf"(^|, | ){re.escape(key)}: ", text)
        if m:
            positions.append((m.start(), key))
    order = [k for _, k in sorted(positions)]
    assert order == [k for k in KEYS if k in order], f"attribute order {order} in {text!r}"


def _parse_body(lines: list[str]) -> tuple[list[Node], list[str]]:
    """Element lines (folding continuations) until the blank line before the footer."""
    nodes: list[Node] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = ELEMENT.match(line)
        if m and int(m.group(2)) == len(nodes):
            depth = len(m.group(1))
            if nodes:
                assert depth <= nodes[-1].depth + 1, f"depth jumps at {line!r}"
            else:
                assert depth == 0, "the window root must be at column 0"
            nodes.append(Node(int(m.group(2)), depth, m.group(3)))
        elif line == "" and (
            i + 1 == len(lines) or lines[i + 1].startswith((FOCUS, "Selected text: "))
        ):
            break
        else:
            assert nodes, f"continuation line before any element: {line!r}"
            nodes[-1].text += "\n" + line
        i += 1
    return nodes, lines[i:]


def _parse_tail(tree: Tree, tail: list[str]) -> None:
    text = "\n".join(tail)
    if not text:
        return
    assert text.startswith("\n"), f"footer not after a blank line: {text[:80]!r}"
    text = text[1:]
    if text.startswith(FOCUS):
        focus, _, rest = text[len(FOCUS) :].partition("\n\nSelected text: ")
        tree.focus = focus
        text = "Selected text: " + rest if rest else ""
        m = re.match(r"^(\d+) ", focus)
        assert m, f"focus footer without an index: {focus!r}"
        node = tree.nodes[int(m.group(1))]
        assert focus == f"{node.index} {node.text}", "focus footer differs from its element line"
    if text:
        m = re.match(r"^Selected text: ```\n(.*)\n```\n\n(.*)$", text, re.S)
        assert m, f"bad selected-text tail: {text!r}"
        assert m.group(2) == NOTE, "selected-text note differs"
        tree.selected = m.group(1)


def _check_tree(tree: Tree) -> Tree:
    assert tree.nodes, "no elements"
    roots = [n for n in tree.nodes if n.depth == 0]
    assert roots[0].index == 0
    assert len(roots) == 2 and roots[1].text.split(" (")[0].startswith("menu bar"), (
        f"expected the window root then a menu bar root, got {[r.text[:30] for r in roots]}"
    )
    for node in tree.nodes:
        _check_line(node)
    return tree


def check_state(text: str) -> Tree:
    """Validate a ``get_app_state`` text in the v26.9 layout and return its tree."""
    lines = text.split("\n")
    assert BANNER.match(lines[0]), f"banner: {lines[0]!r}"
    assert lines[1] == "<app_state>"
    assert PATH_IDENTITY.match(lines[2]), f"identity line: {lines[2]!r}"
    w = WINDOW.match(lines[3])
    assert w, f"window line: {lines[3]!r}"
    assert lines[-1] == "</app_state>"
    nodes, tail = _parse_body(lines[4:-1])
    tree = Tree(lines[2], w.group(1), w.group(2), nodes)
    _parse_tail(tree, tail)
    return _check_tree(tree)


def check_action(text: str) -> Tree:
    """Validate an action result (short identity, no banner, no tags) and return its tree."""
    assert "<app_state>" not in text and "Computer Use state" not in text
    lines = text.split("\n")
    assert SHORT_IDENTITY.match(lines[0]), f"identity line: {lines[0]!r}"
    w = WINDOW.match(lines[1])
    assert w, f"window line: {lines[1]!r}"
    nodes, tail = _parse_body(lines[2:])
    tree = Tree(lines[0], w.group(1), w.group(2), nodes)
    _parse_tail(tree, tail)
    return _check_tree(tree)

"""Round trip: random element trees rendered in Sky's grammar parse back to what was rendered.

Also, on the same trees, the shortcuts agree with the rules: the split reads what the line by
line walk reads, the roles of an unread tree are those of its elements, and candidates ranked
without reading the elements are those ranked from the elements.

No hypothesis: each seed drives a ``random.Random``. A tree has a window subtree numbered depth
first from 0 and a ``menu bar`` after it; elements get random roles (one-word, multi-word,
zh-Hans, raw ``AX…``, unknown, empty), flags, titles and attributes in random order, and values
that run over several lines (blank lines and element-shaped lines included). The layout varies:
header forms, root at column 0 or shifted one tab, tabs or spaces, CRLF, focus footer forms and
the selected-text tail. A second test renders through the simulator's own renderer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from deskhand_d import ax
from deskhand_d.ax import grammar, layout, roles
from deskhand_d.programs.sim import ax as sim_ax

SEEDS = range(300)
SIM_SEEDS = range(100)

ONE_WORD = ["button", "link", "image", "row", "container", "heading", "cell", "outline", "slider"]
ODD = ["AXWebArea", "AXGroup", "Event", "unknown", "智能词库", "列表刻度", "section"]
MULTI = [r for r in roles.MULTI_WORD_ROLES if not r.startswith("menu bar")]
ZH = [r for r in roles.ROLE_ALIASES if not r.isascii()]
FLAGS = ["disabled", "settable", "selectable", "selected", "expanded", "collapsed", "float"]
WORDS = [
    "Calculator", "previous", "month", "Today", "9/18/26,", "11:50", "AM", "file:///tmp/a.txt",
    "计算器", "第一行", "(From", "“Saiyaara”)", "Mode: basic;", "x", "A&B", "#3", "2026",
    "\u200e30", "Value", "ID", "…", "Help", "e.g.", "—", "→", "O'Neil", "x,y", "50%",
]  # fmt: skip
VALUE_LINES = ["Flask", "  │", " ▼", "@app.route('/')", "(note)", "℗ 2025 YRF Music", "第二行", "—"]
KEYS = [k for k in roles.ATTRIBUTE_KEYS if k != grammar.SECONDARY_ACTIONS]
ACTIONS = ["Raise", "Copy", "Scroll Up", "Scroll Down", "Move previous", "移到上一项", "Delete"]


@dataclass
class Node:
    index: int
    depth: int
    source: str  # role as written
    flags: list[str] = field(default_factory=list)
    title: str = ""
    attributes: list[tuple[str, str]] = field(default_factory=list)  # in rendering order
    actions: list[str] = field(default_factory=list)
    actions_at: int = 0  # where the Secondary Actions clause sits among the attributes

    def rest(self, with_actions: bool = True) -> str:
        head = [self.source] if self.source else []
        if self.flags:
            head.append("(" + ", ".join(self.flags) + ")")
        if self.title:
            head.append(self.title)
        pairs = [f"{k}: {v}" for k, v in self.attributes]
        if with_actions and self.actions:
            pairs.insert(self.actions_at, "Secondary Actions: " + ", ".join(self.actions))
        text = " ".join(head)
        if pairs:
            text += (", " if self.title else (" " if text else "")) + ", ".join(pairs)
        return text

    def label(self) -> str:
        without = self.rest(with_actions=False)
        return (without[len(self.source) :] if self.source else without).strip()


def words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def title(rng: random.Random, low: int, high: int) -> str:
    """Words for a title; never opening with "(", which would read as flags."""
    text = words(rng, low, high)
    return "x " + text if text.startswith("(") else text


def value(rng: random.Random, index: int, multiline: bool, ahead: bool = False) -> str:
    """A value; when multi-line, later lines may be blank or look like elements numbered at most
    ``index``, or (``ahead``: more elements follow) beyond the next index."""
    first = words(rng, 0, 4) if rng.random() < 0.8 else ""
    if not multiline or not first:
        return first
    lines = [first]
    for _ in range(rng.randint(1, 4)):
        pick = rng.random()
        if pick < 0.25:
            number = index + rng.randint(2, 500) if ahead and pick < 0.1 else rng.randint(0, index)
            lines.append(f"{number} song, {rng.randint(1, 9)} minutes")
        elif pick < 0.35:
            lines.append("\t" * rng.randint(1, 3) + f"{rng.randint(0, index)} button Not one")
        elif pick < 0.5 and lines[-1]:
            lines.append("")
        else:
            lines.append(rng.choice(VALUE_LINES) + " " + words(rng, 0, 2))
    while lines[-1].strip() == "":
        lines.pop()
    return "\n".join(line.rstrip() for line in lines).strip()


def collides(source: str, rest: str) -> bool:
    """True when a one-word role plus the title reads as a longer known role."""
    return any(rest == r or rest.startswith(r + " ") for r in MULTI if r != source)


def make_node(rng: random.Random, index: int, depth: int, menu_item: bool) -> Node:
    multiline = rng.random() < 0.15
    if menu_item:
        node = Node(
            index, depth, "", title=rng.choice(["File", "Edit", "文件", "Calendar,", "View"])
        )
    else:
        pick = rng.random()
        if pick < 0.1:
            source = ""
        elif pick < 0.4:
            source = rng.choice(MULTI)
        elif pick < 0.6:
            source = rng.choice(ZH)
        elif pick < 0.7:
            source = rng.choice(ODD)
        else:
            source = rng.choice(ONE_WORD)
        node = Node(index, depth, source)
        if rng.random() < 0.4:
            node.flags = rng.sample(FLAGS, rng.randint(1, 3))
        if source and rng.random() < 0.7:
            node.title = title(rng, 1, 4)
            if multiline and rng.random() < 0.5:
                node.title += "\n" + value(rng, index, True, ahead=True)
            node.title = node.title.strip()
    for key in rng.sample(KEYS, rng.randint(0, 3)):
        node.attributes.append((key, value(rng, index, multiline, ahead=not menu_item)))
    if rng.random() < 0.25:
        node.actions = rng.sample(ACTIONS, rng.randint(1, 3))
        node.actions_at = rng.randint(0, len(node.attributes))
    if node.source and collides(node.source, node.rest()):
        return make_node(rng, index, depth, menu_item)
    if not node.source and not menu_item and not node.attributes and not node.flags:
        node.actions = []  # a bare number, as Sky prints an element with nothing to say
    return node


def make_tree(rng: random.Random) -> list[Node]:
    nodes = [Node(0, 0, rng.choice(["standard window", "标准窗口"]), title=title(rng, 1, 3))]
    for index in range(1, rng.randint(2, 40)):
        depth = rng.randint(1, nodes[-1].depth + 1)
        nodes.append(make_node(rng, index, depth, menu_item=False))
    menu = len(nodes)
    nodes.append(Node(menu, 0, "menu bar"))
    for index in range(menu + 1, menu + 1 + rng.randint(0, 4)):
        nodes.append(make_node(rng, index, 1, menu_item=True))
    return nodes


def render(rng: random.Random, nodes: list[Node]) -> tuple[str, list[str], int | None, str, str]:
    """Sky-style text, each element's raw lines, the focus, the app and the window title."""
    shift = 1 if rng.random() < 0.3 else 0
    indent = rng.choice(["\t", "\t", "\t", "  ", "    "])
    raws = [
        indent * (n.depth + shift) + f"{n.index} {n.rest()}".rstrip(" ")
        if n.rest()
        else indent * (n.depth + shift) + str(n.index)
        for n in nodes
    ]
    window = words(rng, 1, 3).replace('"', "")
    layout = rng.randrange(4)
    head: list[str] = []
    app = ""
    if layout == 0:
        app = "com.example.app"
        head = [
            "Computer Use state (CUA App Version: 1001103)",
            "<app_state>",
            f"App=/Applications/Example.app/ (bundleID {app}, pid 42)",
        ]
    elif layout == 1:
        app = "com.example.app"
        head = [f"App={app} (pid 42)"]
    if layout < 3:
        head.append(f'Window: "{window}", App: Example.')
    else:
        window = ""
    focus = rng.choice([None, rng.randrange(len(nodes))])
    tail: list[str] = []
    if focus is not None:
        shown = raws[focus].lstrip(" \t")
        tail = ["", "The focused UI element is " + (shown if rng.random() < 0.5 else f"{focus}.")]
    if rng.random() < 0.3:
        tail += ["", "Selected text: ```", "1 thing", "```"]
    if layout == 0:
        tail.append("</app_state>")
    text = "\n".join([*head, *raws, *tail])
    if rng.random() < 0.2:
        text = text.replace("\n", "\r\n")
    return text, raws, focus, app, window


def test_generator_covers_the_grammar() -> None:
    """The seeds above really exercise the hard parts (so the round trip cannot go trivial)."""
    seen: dict[str, int] = dict.fromkeys(
        [
            "multi-line", "blank line in a value", "element-shaped value line",
            "numbered past the next element", "spaces",
            "shifted root", "crlf", "zh role", "empty role", "raw AX role", "actions not last",
            "bare number", "focus", "selected text", "split", "walk",
        ],
        0,
    )  # fmt: skip
    for seed in SEEDS:
        rng = random.Random(seed)
        nodes = make_tree(rng)
        text, raws, focus, _, _ = render(rng, nodes)
        rest = raws[1:]
        seen["multi-line"] += sum("\n" in r for r in raws)
        seen["blank line in a value"] += sum("\n\n" in r for r in raws)
        shaped = [
            (layout.index_of(line) or 0, n.index)
            for n, r in zip(nodes, raws, strict=True)
            for line in r.split("\n")[1:]
            if layout.index_of(line) is not None
        ]
        seen["element-shaped value line"] += len(shaped)
        seen["numbered past the next element"] += sum(i > e + 1 for i, e in shaped)
        seen["spaces"] += any(r.startswith(" ") for r in rest)
        seen["shifted root"] += raws[0][:1] in ("\t", " ")
        seen["crlf"] += "\r\n" in text
        seen["zh role"] += sum(not n.source.isascii() for n in nodes)
        seen["empty role"] += sum(not n.source and n.depth > 1 for n in nodes)
        seen["raw AX role"] += sum(n.source.startswith("AX") for n in nodes)
        seen["actions not last"] += sum(
            bool(n.actions) and n.actions_at < len(n.attributes) for n in nodes
        )
        seen["bare number"] += sum(r.strip().isdigit() for r in raws)
        seen["focus"] += focus is not None
        seen["selected text"] += "Selected text:" in text
        split = layout.read(text).split
        seen["split"] += split
        seen["walk"] += not split
    assert all(count >= 5 for count in seen.values()), seen


@pytest.mark.parametrize("seed", SEEDS)
def test_round_trip(seed: int) -> None:
    """Indices, depths, roles, labels, states, attributes, actions and raw lines survive."""
    rng = random.Random(seed)
    nodes = make_tree(rng)
    text, raws, focus, app, window = render(rng, nodes)
    tree = ax.parse(text)
    assert (tree.focus, tree.app, tree.window) == (focus, app, window)
    assert [e.index for e in tree.elements] == [n.index for n in nodes]
    for node, raw, element in zip(nodes, raws, tree.elements, strict=True):
        expected_role = roles.ROLE_ALIASES.get(node.source, node.source)
        assert element.depth == node.depth, raw
        assert (element.role, element.source_role) == (expected_role, node.source), raw
        assert element.label == node.label(), raw
        assert element.states == tuple(f.lower() for f in node.flags), raw
        assert element.attributes == dict(node.attributes), raw
        assert element.secondary_actions == tuple(node.actions), raw
        assert element.raw == raw


GOALS = ["", "Switch to the previous month", "open the File menu", "search Calculator 2026"]


@pytest.mark.parametrize("seed", SEEDS)
def test_shortcuts_agree_with_the_rules(seed: int) -> None:
    """The split and the walk give the same layout; an unread tree's roles and candidates are
    those its elements give."""
    rng = random.Random(seed)
    text = render(rng, make_tree(rng))[0]
    fast, walked = layout.read(text), layout.read_by_lines(text)
    assert list(fast.indices) == list(walked.indices)
    assert [fast.raw(at) for at in range(len(fast))] == [walked.raw(at) for at in range(len(fast))]
    assert [fast.rest(at) for at in range(len(fast))] == [
        walked.rest(at) for at in range(len(fast))
    ]
    assert list(fast.depths()) == list(walked.depths())
    assert (fast.focus, fast.app, fast.pid, fast.window) == (
        walked.focus,
        walked.app,
        walked.pid,
        walked.window,
    )
    elements = ax.parse(text).elements
    assert ax.parse(text).roles() == [e.role for e in elements]
    for goal in GOALS:
        unread = ax.select_candidates(ax.parse(text), goal, 12)
        read = ax.select_candidates(ax.Tree(elements), goal, 12)
        assert unread == read, goal
        assert [(c.index, c.role, c.label) for c in unread.candidates] == [
            (c.element.index, c.element.role, c.element.label) for c in read.candidates
        ]


def sim_tree(rng: random.Random, depth: int = 0) -> sim_ax.Element:
    """A random simulator element with children (the renderer numbers and indents them)."""
    roles = ["button", "text", "container", "radio button", "scroll area", "list", "image"]
    node = sim_ax.Element(
        key=f"k{rng.random()}",
        role=rng.choice(roles),
        label=title(rng, 0, 3),
        flags=tuple(rng.sample(FLAGS, rng.randint(0, 2))),
        description=words(rng, 1, 2) if rng.random() < 0.3 else None,
        value=value(rng, 0, rng.random() < 0.2) if rng.random() < 0.3 else None,
        ident=f"id-{rng.randrange(99)}" if rng.random() < 0.3 else None,
        actions=tuple(rng.sample(ACTIONS, rng.randint(0, 2))),
    )
    if depth < 4:
        node.children.extend(sim_tree(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    return node


@pytest.mark.parametrize("seed", SIM_SEEDS)
def test_simulator_renderings(seed: int) -> None:
    """What the simulator renders (either locale) parses to its numbering, depths and roles."""
    rng = random.Random(seed)
    items = [sim_ax.Element(key=f"item{i}", label=t) for i, t in enumerate(["File", "Ed"])]
    menu = sim_ax.Element(key="menu", role="menu bar", children=items)
    window = sim_ax.Window(
        title="Doc", app_name="Example", root=sim_tree(rng), menu_bar=menu, focus_key=None
    )
    locale = rng.choice(["en", "zh-Hans"])
    rendering = sim_ax.render(window, locale)
    text = sim_ax.state_text(rendering, "App=com.example.app (pid 1)", "1001103")
    tree = ax.parse(text)
    assert [e.index for e in tree.elements] == list(range(len(rendering.elements)))
    assert [e.depth for e in tree.elements] == list(rendering.depths)
    for node, element in zip(rendering.elements, tree.elements, strict=True):
        if node.key.startswith("item"):
            assert (element.role, element.label) == ("", node.label)
            continue
        assert element.role == node.role
        assert element.source_role == sim_ax.localize_role(node.role, locale)
        assert element.secondary_actions == node.actions
        if not (node.flags or node.description or node.value is not None or node.ident):
            assert element.label == node.label
        assert element.states == node.flags
        expected = {
            k: v
            for k, v in (("Description", node.description), ("Value", node.value))
            if v is not None
        }
        if node.ident is not None:
            expected["ID"] = node.ident
        assert element.attributes == expected

"""docs/design.md's module index matches the tree: every module of ``deskhand_d`` and the CLI,
with the first sentence of its docstring, generated from the code.

Run ``python tests/unit/test_design_doc.py --write`` after adding, moving or renaming a module
(or changing the first sentence of its docstring) to write the index again."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
BEGIN = "<!-- module index: generated -->"
END = "<!-- module index: end -->"
TREES = (ROOT / "deskhand_d", ROOT / "clients" / "deskhandctl")


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence (up to the first full stop that ends a word), one line,
    with reStructuredText's roles and double backquotes turned into Markdown code."""
    paragraph = " ".join(docstring.strip().split("\n\n", 1)[0].split())
    paragraph = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", paragraph).replace("``", "`")
    match = re.search(r"(?<=[a-z)`\]])\.(\s|$)", paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


def index() -> str:
    """The generated block: one line per module, grouped by package, in path order."""
    lines = []
    for tree in TREES:
        for path in sorted(tree.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            where = path.relative_to(ROOT).as_posix()
            lines.append(f"- `{where}`: {first_sentence(doc) or '(no docstring)'}")
    return "\n".join(lines)


def _current(text: str) -> str:
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def test_first_sentence_stops_at_the_end_of_a_sentence_not_at_a_dotted_name() -> None:
    text = "Reads ``deskhand_d.ax`` trees with :func:`~.layout.read`. Pure.\n\nMore."
    assert first_sentence(text) == "Reads `deskhand_d.ax` trees with `.layout.read`."
    assert first_sentence("No full stop at all") == "No full stop at all"


def test_every_module_has_a_docstring_that_says_what_it_owns() -> None:
    assert "(no docstring)" not in index()


def test_design_md_lists_exactly_the_modules_of_the_tree() -> None:
    current = _current(DESIGN.read_text(encoding="utf-8"))
    wanted = index()
    listed = set(re.findall(r"^- `([^`]+)`", current, re.MULTILINE))
    present = set(re.findall(r"^- `([^`]+)`", wanted, re.MULTILINE))
    assert sorted(present - listed) == [], "modules missing from design.md (run with --write)"
    assert sorted(listed - present) == [], "design.md lists modules that are gone"
    assert current == wanted, "a first sentence changed: run this file with --write"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    text = DESIGN.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DESIGN.write_text(f"{head}{BEGIN}\n{index()}\n{END}{tail}", encoding="utf-8")

"""Sky's accessibility-tree text, read once for everyone who needs it. Pure.

The daemon's stateIds take their facts from it (:func:`inspect`: the element indices, the
identity line, whether the text is one complete tree) and Jev takes the elements it chooses from
(:func:`parse`, :func:`select_candidates`). Layers, bottom up: :mod:`.layout` (where the tree and
each element's text are), :mod:`.roles` and :mod:`.grammar` (one element's role, label, flags
and attributes), :mod:`.tree` (elements, read on demand), :mod:`.candidates` (what Jev may act on),
:mod:`.facts` (the daemon's view) and :mod:`.report` (``deskhandctl ax parse``).
"""

from __future__ import annotations

from deskhand_d.ax.candidates import Candidate, Selection, select_candidates
from deskhand_d.ax.facts import TreeFacts, inspect
from deskhand_d.ax.layout import MAX_INDEX, RECEIPT, AxParseError
from deskhand_d.ax.tree import Element, Tree, find, parse

__all__ = [
    "MAX_INDEX",
    "RECEIPT",
    "AxParseError",
    "Candidate",
    "Element",
    "Selection",
    "Tree",
    "TreeFacts",
    "find",
    "inspect",
    "parse",
    "select_candidates",
]

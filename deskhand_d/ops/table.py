"""Which op serves each request kind: the groups joined into one table.

What this owns: :func:`handler_table`, the one place the daemon's request kinds meet their
ops (``tests/unit/test_handler_table.py`` checks that every kind has exactly one).
"""

from __future__ import annotations

from deskhand_d.ops import basic, console, doctor, jev, native
from deskhand_d.ops.context import Handler

GROUPS = (basic.HANDLERS, console.HANDLERS, doctor.HANDLERS, native.HANDLERS, jev.HANDLERS)


def handler_table() -> dict[type, Handler]:
    """Every op's handler, from the groups that own them (each op in exactly one group)."""
    table: dict[type, Handler] = {}
    for group in GROUPS:
        table.update(group)
    return table

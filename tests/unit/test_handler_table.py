"""Every request the protocol defines has exactly one handler, and nothing else has one."""

from __future__ import annotations

import typing

from deskhand_d.ops.table import GROUPS, handler_table
from deskhand_d.protocol import requests


def test_every_request_variant_has_exactly_one_handler() -> None:
    variants = set(typing.get_args(requests.Request))
    owned = [op for group in GROUPS for op in group]
    assert len(owned) == len(set(owned)), "an op is handled by two groups"
    assert set(handler_table()) == variants

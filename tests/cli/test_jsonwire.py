"""``deskhandctl.wire.jsontext`` reads and writes JSON exactly as the ``json`` package does."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from deskhandctl.wire import jsontext as jsonwire
from hypothesis import given
from hypothesis import strategies as st

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8"))
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def same(a: object, b: object) -> bool:
    """Equality that counts NaN as equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(VALUES)
def test_encoders_match_json(value: object) -> None:
    """Both encodings are byte for byte what json.dumps gives with the same settings."""
    assert jsonwire.dumps_compact(value) == json.dumps(value, separators=(",", ":"))
    assert jsonwire.dumps_readable(value) == json.dumps(value, ensure_ascii=False)


@given(VALUES, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_decoder_matches_json(value: object, space: str) -> None:
    """Whatever json.dumps writes (with surrounding whitespace), loads reads back like json.loads."""
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        padded = f"{space}{text}{space}"
        assert same(jsonwire.loads(padded), json.loads(padded))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "{oops",
        '{"a": }',
        '{"a": 1} {"b": 2}',
        '"\x01"',
        "[1,]",
        "nul",
        '{"a" 1}',
        "'x'",
        "1 2",
    ],
)
def test_invalid_documents_raise_value_error(text: str) -> None:
    """Anything json.loads refuses, loads refuses with a ValueError too."""
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        jsonwire.loads(text)


@pytest.mark.parametrize("depth", [100_000, 200_000])
def test_nesting_deeper_than_the_stack_is_a_value_error(depth: int) -> None:
    """json.loads would raise RecursionError, which a reader that answers malformed input by
    catching ValueError would not catch (``deskhandctl mcp`` then never answered)."""
    with pytest.raises(ValueError, match="nested too deeply"):
        jsonwire.loads("[" * depth + "]" * depth)
    assert jsonwire.loads("[" * 50 + "]" * 50) == json.loads("[" * 50 + "]" * 50)


def test_importing_it_loads_neither_json_nor_re() -> None:
    """The point of the module: no json package, no re, in a fresh interpreter."""
    probe = "import sys, deskhandctl.wire.jsontext as j; j.loads('[1]'); j.dumps_compact([1]); print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_invalid_documents_raise_value_error_before_json_is_imported() -> None:
    """In a fresh interpreter (json.decoder not imported, as in deskhandctl), the C scanner
    cannot build its own error; loads still refuses with a ValueError that says where."""
    bad = ['"\x01"', '{"a":1,}', '{"a" 1}', '"abc', '{"a": }']
    probe = (
        "import sys, deskhandctl.wire.jsontext as j\n"
        "assert 'json.decoder' not in sys.modules\n"
        "for text in sys.argv[1:]:\n"
        "    try:\n"
        "        j.loads(text)\n"
        "    except ValueError as exc:\n"
        "        print(type(exc).__name__, 'char' in str(exc))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *bad], capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:-1] == ["JSONDecodeError True"] * 4 + ["ValueError True"]

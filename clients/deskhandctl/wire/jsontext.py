"""JSON for the CLI through ``_json``, the C accelerator of the ``json`` package, used directly.

``import json`` is the largest single cost of ``deskhandctl status``: ``json.decoder`` imports
``re``, which imports ``enum``, ``functools`` and more, about as much again as the rest of the
CLI's imports together. The scanner and encoder that ``json.loads`` and ``json.dumps`` use are
in ``_json``; called the way ``json`` calls them they give identical results (a test compares
the two on generated values) without importing any of that. Where ``_json`` is missing (an
interpreter other than CPython), the ``json`` package is used instead.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"  # what json.decoder skips around a document


class _DecoderContext:
    """The attributes ``_json.make_scanner`` reads from a ``json.JSONDecoder``, as json.loads
    sets them: strict strings, plain dicts, ``NaN`` and ``Infinity`` as floats."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict[str, str] = {}  # noqa: RUF012 - read by the scanner, never changed


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


if _json is not None:
    # typeshed types the context as another scanner; any object with these attributes works.
    _scan: Callable[[str, int], tuple[object, int]] = _json.make_scanner(
        _DecoderContext()  # type: ignore[arg-type]
    )
    # json.dumps(value, separators=(",", ":")) and json.dumps(value, ensure_ascii=False).
    _compact = _json.make_encoder(
        None, _unserializable, _json.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    _readable = _json.make_encoder(
        None, _unserializable, _json.encode_basestring, None, ": ", ", ", False, False, True
    )


def loads(text: str) -> object:
    """Decode one JSON document like ``json.loads``; ValueError if it is not one."""
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"no JSON value at character {exc.value}") from None
    except RecursionError:
        # Arrays or objects nested deeper than the interpreter's stack allows: malformed input
        # like any other, answered as such (the reader must keep serving).
        raise ValueError("the JSON value is nested too deeply") from None
    except SystemError:
        # The scanner reports most malformed documents with json.decoder's JSONDecodeError,
        # which it finds only once that module is imported; before, it fails without an
        # exception set. Bad input is the rare path: let the json package say what is wrong.
        import json

        return json.loads(text)
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def dumps_compact(value: object) -> str:
    """``json.dumps(value, separators=(",", ":"))``: ASCII, no spaces (for the wire)."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, separators=(",", ":"))
    return "".join(_compact(value, 0))


def dumps_readable(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False)``: one line for people and scripts (``--json``)."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=False)
    return "".join(_readable(value, 0))

"""Asking a ``codex`` binary what its ``sandbox`` command accepts, once per binary.

What this owns: running ``codex --version`` and ``codex sandbox --help`` (and, when that lists
only per-system subcommands, ``codex sandbox macos --help``) with a deadline and the
environment every child gets (:func:`deskhand_d.childenv.child_env`), and :class:`ShapeCache`,
the owner-only file beside Sky's recipe memory that keeps the answer per codex binary: its
path, modification time and size, so that an updated codex is asked again and an unchanged
one never twice. Reading the text is :mod:`deskhand_d.backends.codexhelp`'s.

A codex that cannot be asked (it hangs, fails, prints nothing we recognise) gets
:data:`~deskhand_d.backends.codexhelp.ASSUMED`, the spellings used before this reading
existed, and that answer is not cached: the next start asks again.

Synchronous and short: it runs where a launch is resolved, once per start of a connection.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from deskhand_d.backends import codexhelp
from deskhand_d.backends.codexhelp import ASSUMED, Shape
from deskhand_d.childenv import child_env
from deskhand_d.errors import DeskhandError, SettingsError
from deskhand_d.privatefile import PrivateFile

CACHE_NAME: Final = "sky-codex.json"
PROBE_TIMEOUT_S: Final = 10.0
_MAX_ENTRIES: Final = 8  # codex binaries remembered at once (the oldest goes first)
_MAX_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """The shape to use, where it came from (``cached``, ``read`` or ``assumed``), and a
    detail worth logging: for an assumed shape why the help could not be used, for a read one
    why it could not be cached."""

    shape: Shape
    origin: str
    detail: str = ""


def ask(
    codex: Path, env: Mapping[str, str], cwd: Path, timeout_s: float = PROBE_TIMEOUT_S
) -> Answer:
    """Run codex for its version and its sandbox help; the shape they describe."""
    try:
        version = codexhelp.version_line(_run(codex, ("--version",), env, cwd, timeout_s))
    except _NoAnswer:
        version = ""  # the help alone decides; the version is only for the log
    try:
        top = codexhelp.parse(_run(codex, ("sandbox", "--help"), env, cwd, timeout_s))
        shape = codexhelp.shape_of(top, codexhelp.PLAIN, version)
        sub = top.macos_subcommand()
        if not codexhelp.recognised(shape) and sub:
            text = _run(codex, (*codexhelp.PLAIN, sub, "--help"), env, cwd, timeout_s)
            shape = codexhelp.shape_of(codexhelp.parse(text), (*codexhelp.PLAIN, sub), version)
    except _NoAnswer as exc:
        return Answer(_assumed(version), "assumed", str(exc))
    if not codexhelp.recognised(shape):
        why = "its sandbox help lists none of the options Deskhand uses"
        return Answer(_assumed(version), "assumed", why)
    return Answer(shape, "read")


def _assumed(version: str) -> Shape:
    return dataclasses.replace(ASSUMED, version=version)


class _NoAnswer(Exception):
    pass


def _run(
    codex: Path, args: tuple[str, ...], env: Mapping[str, str], cwd: Path, timeout_s: float
) -> str:
    what = f"`codex {' '.join(args)}`"
    try:
        done = subprocess.run(
            [str(codex), *args],
            env=child_env(env),
            cwd=cwd if cwd.is_dir() else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _NoAnswer(f"{what} did not finish within {timeout_s:g} s") from None
    except OSError as exc:
        raise _NoAnswer(f"{what} could not run: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise _NoAnswer(f"{what} ended with status {done.returncode}")
    return done.stdout.decode("utf-8", "replace")


def _refuse(reason: str, message: str) -> DeskhandError:
    return SettingsError(message, data={"reason": reason})


class ShapeCache:
    """``{"codex": {path: {"mtime_ns", "size", "shape"}}}`` in one owner-only file.

    A missing, unsafe or damaged file means nothing is cached; a failed write costs the next
    start one more reading of the help (the caller logs it).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = PrivateFile(path, max_bytes=_MAX_BYTES, lock_wait_s=2.0, error=_refuse)

    @staticmethod
    def stamp(codex: Path) -> tuple[int, int] | None:
        """What identifies this build of codex: the file's (mtime in ns, size)."""
        try:
            st = codex.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _entries(self) -> dict[str, object]:
        try:
            raw = self._file.read_bytes()
            data = json.loads(raw) if raw else {}
        except (DeskhandError, ValueError):
            return {}
        entries = data.get("codex") if isinstance(data, dict) else None
        return dict(entries) if isinstance(entries, dict) else {}

    def get(self, codex: Path) -> Shape | None:
        stamp = self.stamp(codex)
        entry = self._entries().get(str(codex))
        if stamp is None or not isinstance(entry, dict):
            return None
        if (entry.get("mtime_ns"), entry.get("size")) != stamp:
            return None
        return Shape.from_data(entry.get("shape"))

    def put(self, codex: Path, shape: Shape) -> None:
        """Keep ``shape`` for this build of ``codex``. Raises OSError when it cannot."""
        stamp = self.stamp(codex)
        if stamp is None or shape.source != "read":
            return
        try:
            with self._file.locked():
                entries = self._entries()
                entries.pop(str(codex), None)
                entries[str(codex)] = {
                    "mtime_ns": stamp[0],
                    "size": stamp[1],
                    "shape": shape.to_data(),
                }
                kept = dict(list(entries.items())[-_MAX_ENTRIES:])
                text = json.dumps({"codex": kept}, indent=1, sort_keys=True) + "\n"
                self._file.replace(text.encode("utf-8"))
        except DeskhandError as exc:
            raise OSError(exc.message) from None


def shape_for(codex: Path, env: Mapping[str, str], cwd: Path, cache: ShapeCache) -> Answer:
    """The cached shape of this build of ``codex``, else one read from it now (and cached)."""
    cached = cache.get(codex)
    if cached is not None:
        return Answer(cached, "cached")
    answer = ask(codex, env, cwd)
    if answer.origin == "read":
        try:
            cache.put(codex, answer.shape)
        except OSError as exc:
            return Answer(answer.shape, "read", f"not cached: {exc}")
    return answer

"""What a ``codex`` binary's ``sandbox`` command accepts, read from its own help text. Pure.

What this owns: :class:`Shape` (which subcommand runs a program in codex's sandbox, and how
this codex spells each option Sky's recipes use, or that it lacks it) and the reading of
``codex sandbox --help`` (and, for the older shape, ``codex sandbox macos --help``) into one.
Running codex and remembering the answer are :mod:`deskhand_d.backends.codexprobe`'s.

codex has shipped three shapes of the command, and Deskhand meets all of them in the field:

* ``codex sandbox macos [OPTIONS] [COMMAND]...``: the sandbox per operating system as a
  subcommand, with ``-c/--config`` but no permission profiles;
* ``codex sandbox [OPTIONS] [COMMAND]...`` with ``--permissions-profile`` but no ``-P``;
* ``codex sandbox -P/--permissions-profile ...`` (the combined form the predecessor ran).

The help is clap's layout: section headings at the left margin (``Options:``, ``Commands:``;
``OPTIONS:``, ``SUBCOMMANDS:`` in older clap), entries indented under them. An option line
lists its names first (``-c, --config <key=value>``), then, after two spaces or on the next
lines, its description. Only names that stand at the start of such a line count, so an example
in a description cannot pass for an option. A short name counts only when its line has no
long name or has the one we want (``-p, --profile`` is not ``-P``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

PLAIN: Final = ("sandbox",)
# The older shape's subcommand, by its name or its alias (a commands entry's first word, or a
# name in its "[aliases: ...]" note).
_MACOS_NAMES: Final = ("macos", "seatbelt")
_SUBCOMMANDS: Final = (PLAIN, *((*PLAIN, name) for name in _MACOS_NAMES))

# The options Sky's recipes use: (field, long name, short name or "").
OPTIONS: Final = (
    ("profile", "--permissions-profile", "-P"),
    ("config", "--config", "-c"),
    ("state_json", "--sandbox-state-json", ""),
    ("unix_socket", "--allow-unix-socket", ""),
)
# What each recipe cannot do without (the unix-socket allowance is added where offered).
NEEDS: Final = {
    "permissions_profile": "profile",
    "config_override": "config",
    "sandbox_state": "state_json",
}
_SPELLINGS: Final = {field: {"", long, short} - {""} for field, long, short in OPTIONS}

_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9-]*")
_ENTRY_INDENT: Final = 8  # clap indents entries by 2 to 6; descriptions run deeper


@dataclass(frozen=True, slots=True)
class Shape:
    """How to spell a sandbox run for one codex. An empty option means this codex lacks it.

    ``source`` is ``read`` (from the help text) or ``assumed`` (the help said nothing we
    recognise: the spellings the predecessor ran, tried as they are).
    """

    subcommand: tuple[str, ...] = PLAIN
    profile: str = ""
    config: str = ""
    state_json: str = ""
    unix_socket: str = ""
    version: str = ""
    source: str = "read"

    def offers(self, recipe: str) -> bool:
        field = NEEDS.get(recipe)
        return bool(field and getattr(self, field))

    def describe(self) -> str:
        """One line for the log and doctor: the command and the options it offers."""
        found = [getattr(self, field) for field, _, _ in OPTIONS if getattr(self, field)]
        listed = ", ".join(found) if found else "none of the options Deskhand uses"
        return f"codex {' '.join(self.subcommand)} with {listed}"

    def to_data(self) -> dict[str, Any]:
        return {
            "subcommand": list(self.subcommand),
            **{field: getattr(self, field) for field, _, _ in OPTIONS},
            "version": self.version,
            "source": self.source,
        }

    @classmethod
    def from_data(cls, data: object) -> Shape | None:
        """A shape read back from the cache; ``None`` for anything this code would not write
        (so a damaged or foreign file can never put another word on codex's command line)."""
        if not isinstance(data, dict):
            return None
        sub = data.get("subcommand")
        if not isinstance(sub, list) or tuple(sub) not in _SUBCOMMANDS:
            return None
        spelled: dict[str, str] = {}
        for field, _, _ in OPTIONS:
            value = data.get(field, "")
            if not isinstance(value, str) or (value and value not in _SPELLINGS[field]):
                return None
            spelled[field] = value
        version = data.get("version", "")
        if not isinstance(version, str) or data.get("source") != "read":
            return None
        shape = cls(subcommand=tuple(sub), version=version[:200], **spelled)
        return shape if any(shape.offers(r) for r in NEEDS) else None


# The predecessor's spellings: used when the help text could not be read or said nothing we
# recognise, so that such a codex is started exactly as before this reading existed.
ASSUMED: Final = Shape(
    profile="-P",
    config="-c",
    state_json="--sandbox-state-json",
    unix_socket="--allow-unix-socket",
    source="assumed",
)


@dataclass(frozen=True, slots=True)
class Help:
    """The entries of one help text: each option's names (one tuple per option), the
    subcommands' names and aliases."""

    options: tuple[tuple[str, ...], ...]
    commands: tuple[str, ...]

    def macos_subcommand(self) -> str:
        return next((n for n in _MACOS_NAMES if n in self.commands), "")


def parse(text: str) -> Help:
    """The option and subcommand entries of a clap help text (nothing else is read)."""
    options: list[tuple[str, ...]] = []
    commands: list[str] = []
    section = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if indent == 0:
            section = line.split(":", 1)[0].strip().lower() if ":" in line else ""
            continue
        if indent > _ENTRY_INDENT:
            continue  # a description's own lines
        entry = line.strip()
        if entry.startswith("-"):
            names = _option_names(entry)
            if names:
                options.append(names)
        elif "command" in section:
            commands.extend(_command_names(entry))
    return Help(options=tuple(options), commands=tuple(commands))


def _option_names(entry: str) -> tuple[str, ...]:
    head = re.split(r"\s{2,}", entry, maxsplit=1)[0]
    names: list[str] = []
    for token in re.split(r"[,\s]+", head):
        token = token.split("=", 1)[0]
        if _NAME.fullmatch(token):
            names.append(token)
        elif names:
            break  # the value's placeholder (<NAME>, [PATH]): the names are done
        else:
            return ()
    return tuple(names)


def _command_names(entry: str) -> list[str]:
    first = entry.split()[0]
    names = [first] if re.fullmatch(r"[a-z][a-z0-9-]*", first) else []
    alias = re.search(r"\[aliases?:\s*([^\]]*)\]", entry)
    if alias:
        names.extend(a.strip() for a in alias.group(1).split(",") if a.strip())
    return names


def spelling(help_: Help, long: str, short: str) -> str:
    """How this help spells the option ``long`` (or ``short``): the long name where listed."""
    if any(long in names for names in help_.options):
        return long
    if short:
        for names in help_.options:
            if short in names and not any(n.startswith("--") and n != long for n in names):
                return short
    return ""


def shape_of(help_: Help, subcommand: tuple[str, ...], version: str = "") -> Shape:
    fields = {field: spelling(help_, long, short) for field, long, short in OPTIONS}
    return Shape(subcommand=subcommand, version=version, **fields)


def recognised(shape: Shape) -> bool:
    """Does this shape offer at least one recipe? (If not, the help was not what we know.)"""
    return any(shape.offers(recipe) for recipe in NEEDS)


def version_line(text: str) -> str:
    """The first line of ``codex --version``, kept short."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:200]

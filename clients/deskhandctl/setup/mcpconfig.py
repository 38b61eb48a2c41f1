"""``deskhandctl mcp config --host HOST [--scope user|project] [--name NAME] [--write]``.

Owns registering Deskhand's MCP server (``deskhandctl mcp``) with an agent host: Claude Code,
Codex, Cursor, Claude Desktop and VS Code. Without ``--write`` it prints the entry in the
host's own format, the file it belongs in and, where the host has one, the host's command
that adds it. With ``--write`` it edits that file.

Theory of operation: a run builds a :class:`Target` (host, scope, file, format) and a
:class:`Server` (the command of this installation and the environment it needs), then either
prints them or computes the file's new text from its old text, checks the result, backs the
old file up and swaps the new one in with a rename. Nothing is written unless every check
passed, so a refusal leaves the file as it was.

What an edit keeps: JSON files are parsed and written back in the person's key order with a
2-space indent (the formatting of the rest of the file may change; the values do not). Codex's
TOML is never re-serialised: only the lines of our own ``[mcp_servers.<name>]`` table and its
``.env`` subtable are replaced, every other byte stays, and the result is parsed again and
compared with the original, minus our entry, before anything is written.

What it refuses (exit 1, nothing written): a file that is not valid JSON or TOML, or not UTF-8;
JSON with duplicate keys (rewriting would silently drop one); a top level, server map or entry
of an unexpected type; our Codex entry written as an inline table or dotted keys (no safe
textual edit); a file that is not a regular file, or not the person's own; a symbolic link
whose target is missing, not a regular file of the person's, or in a directory that is not
theirs or that others may write (a link into one's own dotfiles is followed and the link
kept); a file that changed while we edited it.

The command line is read by :mod:`deskhandctl.cli.parser`: the ``mcp config`` entry of the
grammar table lists the options and the hosts, refuses what the table alone cannot (a scope the
host lacks, a bad ``--name``, ``--write`` with another platform) and names :func:`configure`.

Exit status: 0 printed or written (also when the entry was already there); 1 refused or
failed; 2 bad usage (from the parser).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import shlex
import stat
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deskhand_d import paths
from deskhand_d.privatefile import fsync_dir
from deskhandctl.cli.grammar import MCP_DEFAULT_NAME, MCP_HOSTS, MCP_TITLES
from deskhandctl.setup.filewrite import fill

if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args

PROG = "deskhandctl mcp config"
HOSTS = MCP_HOSTS  # the grammar's table lists them (its --host choices)
DEFAULT_NAME = MCP_DEFAULT_NAME
NEW_FILE_MODE = 0o600
NEW_DIR_MODE = 0o700
# A project's file is meant to be checked in and read by teammates' tools, as the hosts' own
# commands write it (claude mcp add writes .mcp.json 0644): it holds no machine's paths.
PROJECT_FILE_MODE = 0o644
PROJECT_DIR_MODE = 0o755
MAX_BYTES = 64 * 1024 * 1024  # ~/.claude.json holds Claude Code's state and can grow large
CODEX_TOOL_TIMEOUT_S = 600
"""Codex gives a tool call 60 s by default; a call may wait while the person answers a
consent question, which has no deadline of its own. Ten minutes is a generous wait."""
DIFF_LINES = 80

_TITLES = MCP_TITLES


class Refusal(Exception):
    """The file cannot be edited safely; ``str(exc)`` says why, for the person."""


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    scope: str
    path: Path
    key: str  # where the servers live: "mcpServers", "servers" or "mcp_servers"
    where: str  # says where in the file the entry goes
    elsewhere: tuple[str, ...] = ()  # the same file on other platforms, printed only
    notes: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return _TITLES[self.host]

    @property
    def is_toml(self) -> bool:
        return self.host == "codex"


@dataclass(frozen=True, slots=True)
class Server:
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    approve_tools: bool = False  # Codex: run the tools without its own approval prompt

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


# ----- what to register ------------------------------------------------------------------------


def server_for(env: paths.Env, *, macos: bool, executable: str = sys.executable) -> Server:
    """The server command of this installation and the environment it needs.

    The interpreter running now, by absolute path, with ``-P -m deskhandctl mcp`` — not the
    ``deskhandctl`` console script, and never a bare command name: hosts start servers with a
    small environment of their own (Claude Desktop and Codex pass on only a few variables, and
    PATH may not include a virtualenv's ``bin``), so a bare name may find another installation
    or none; this interpreter is known to import this very ``deskhandctl``, exists whether or
    not the package was installed with scripts, and a script's ``#!`` line only points back to
    it anyway. ``-P`` keeps the host's working directory (a project that may hold modules of
    the same names) off the import path. ``abspath``, not ``resolve``: a virtualenv's python is
    a symlink whose target would lose the virtualenv.
    """
    if not executable:
        raise Refusal("cannot tell which Python runs deskhandctl (sys.executable is empty)")
    pinned: list[tuple[str, str]] = []
    # The socket: pinned whenever its default depends on a variable a host may not pass on.
    # On Linux that is XDG_RUNTIME_DIR; without it the server would look in /tmp and, finding
    # no daemon there, start a second one. macOS derives it from HOME, which hosts keep.
    if env.get("DESKHAND_SOCKET") or (not macos and env.get("XDG_RUNTIME_DIR")):
        pinned.append(("DESKHAND_SOCKET", paths.default_socket_str(env)))
    if env.get("DESKHAND_CONFIG"):  # a daemon the server starts must read the same profile
        pinned.append(("DESKHAND_CONFIG", os.path.abspath(env["DESKHAND_CONFIG"])))
    return Server(os.path.abspath(executable), ("-P", "-m", "deskhandctl", "mcp"), tuple(pinned))


PORTABLE = Server("deskhandctl", ("mcp",))
"""A project's entry: the ``deskhandctl`` found on PATH, with the daemon's default socket, so
the same checked-in file works on every teammate's machine where Deskhand is installed (and
pins nothing of this one). A host that starts servers without the user's PATH (Codex passes
few variables on) needs Deskhand's ``bin`` on the PATH it does pass."""


def target_for(host: str, scope: str, env: paths.Env, *, macos: bool, cwd: Path) -> Target:
    """Where ``host`` keeps its servers for ``scope`` on this platform."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    app_support = home / "Library" / "Application Support"
    if host == "claude-code":
        if scope == "project":
            return Target(
                host,
                scope,
                cwd / ".mcp.json",
                "mcpServers",
                '"mcpServers" (run this in the project\'s root; the file is meant to be '
                "checked in)",
                notes=("Claude Code asks once whether to trust the servers of a project file.",),
            )
        # With CLAUDE_CONFIG_DIR set, Claude Code keeps (and reads) its state there, and only
        # there: ~/.claude.json is then not read at all (seen with Claude Code 2.1.332).
        config_dir = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else None
        return Target(
            host,
            scope,
            (config_dir / ".claude.json") if config_dir else home / ".claude.json",
            "mcpServers",
            'the top-level "mcpServers" object (the file also holds much else)',
            notes=(
                "Claude Code rewrites this file while it runs: quit it before --write, or let "
                "claude mcp add make the change.",
            ),
        )
    if host == "codex":
        if scope == "project":
            return Target(
                host,
                scope,
                cwd / ".codex" / "config.toml",
                "mcp_servers",
                "the file, as a table of its own",
                notes=("Codex reads a project's .codex/config.toml only once you trust it.",),
            )
        codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        path = codex_home / "config.toml"
        return Target(host, scope, path, "mcp_servers", "the file, as a table of its own")
    if host == "cursor":
        base = cwd if scope == "project" else home
        return Target(host, scope, base / ".cursor" / "mcp.json", "mcpServers", '"mcpServers"')
    if host == "claude-desktop":
        windows = r"Windows: %APPDATA%\Claude\claude_desktop_config.json"
        if macos:
            path = app_support / "Claude" / "claude_desktop_config.json"
            restart: tuple[str, ...] = ("Quit and reopen Claude Desktop to load it.",)
        else:
            path = xdg / "Claude" / "claude_desktop_config.json"
            restart = (
                "Claude Desktop has no official Linux build; this is the path the community "
                "builds read. Quit and reopen the app to load it.",
            )
        return Target(host, scope, path, "mcpServers", '"mcpServers"', (windows,), restart)
    if host == "vscode":
        if scope == "project":
            return Target(host, scope, cwd / ".vscode" / "mcp.json", "servers", '"servers"')
        user = (app_support if macos else xdg) / "Code" / "User" / "mcp.json"
        return Target(
            host,
            scope,
            user,
            "servers",
            '"servers"',
            notes=(
                "This is the default profile's file; for another profile, or VS Code "
                'Insiders, run "MCP: Open User Configuration" in VS Code and paste the entry.',
            ),
        )
    raise ValueError(host)


# ----- the entry in each format ----------------------------------------------------------------


def json_entry(host: str, server: Server) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if host in ("claude-code", "vscode"):
        entry["type"] = "stdio"
    entry["command"] = server.command
    entry["args"] = list(server.args)
    if server.env:
        entry["env"] = dict(server.env)
    return entry


def toml_str(value: str) -> str:
    """A TOML basic string."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_entry(name: str, server: Server, newline: str = "\n") -> str:
    args = ", ".join(toml_str(a) for a in server.args)
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {toml_str(server.command)}",
        f"args = [{args}]",
        f"tool_timeout_sec = {CODEX_TOOL_TIMEOUT_S}  # a call may wait for a consent answer",
    ]
    if server.approve_tools:
        lines.append(
            'default_tools_approval_mode = "approve"  # codex exec runs no tool it must ask about'
        )
    if server.env:
        lines += ["", f"[mcp_servers.{name}.env]"]
        lines += [f"{key} = {toml_str(value)}" for key, value in server.env]
    return newline.join(lines) + newline


def toml_expected(server: Server) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "command": server.command,
        "args": list(server.args),
        "tool_timeout_sec": CODEX_TOOL_TIMEOUT_S,
    }
    if server.approve_tools:
        entry["default_tools_approval_mode"] = "approve"
    if server.env:
        entry["env"] = dict(server.env)
    return entry


def snippet(target: Target, name: str, server: Server) -> str:
    if target.is_toml:
        return toml_entry(name, server)
    return json_dump({target.key: {name: json_entry(target.host, server)}})


def json_dump(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def host_command(target: Target, name: str, server: Server) -> list[str] | None:
    """The host's own command that adds the same server, if it has one for this scope."""
    if target.host == "claude-code":
        argv = ["claude", "mcp", "add", "--scope", target.scope]
        for key, value in server.env:
            argv += ["-e", f"{key}={value}"]
        # --transport after -e: -e takes several values and would swallow the name otherwise.
        return [*argv, "--transport", "stdio", name, "--", *server.argv]
    # Not `codex mcp add`: it writes no tool_timeout_sec (Codex then ends a call waiting for
    # the person's answer after 60 s) and, run again later, drops the one we wrote (0.171.0).
    if target.host == "vscode" and target.scope == "user":
        spec = {"name": name, **json_entry("vscode", server)}
        return ["code", "--add-mcp", json.dumps(spec, ensure_ascii=False)]
    return None


# ----- printing --------------------------------------------------------------------------------


def print_entry(target: Target, name: str, server: Server, rerun: list[str]) -> None:
    print(f"Deskhand for {target.title} ({target.scope} scope)")
    print(f"File: {target.path}")
    print(f"Add this to {target.where}; other entries stay as they are:")
    print()
    print(snippet(target, name, server), end="")
    print()
    command = host_command(target, name, server)
    if command is not None:
        print(f"Or let {target.title} add it:")
        print(f"  {shlex.join(command)}")
        print()
    print("Or let deskhandctl edit the file (it keeps a backup):")
    print(f"  {shlex.join([*rerun, '--write'])}")
    for line in target.elsewhere:
        print(f"On {line}")
    for note in _notes(target, server):
        print(f"Note: {note}")


def _notes(target: Target, server: Server) -> list[str]:
    notes = list(target.notes)
    if target.is_toml:
        notes.append(
            f"tool_timeout_sec = {CODEX_TOOL_TIMEOUT_S}: Codex ends a tool call after 60 s by "
            "default, and a call may be waiting for the person to answer a consent question. "
            "`codex mcp add` writes no such line and drops it when run over this entry: use "
            "this command (with --write) instead."
        )
        if server.approve_tools:
            notes.append(
                'default_tools_approval_mode = "approve": Codex runs these tools without its own '
                "prompt (`codex exec` refuses every tool it would have to ask about); Deskhand "
                "still asks the person before it operates an app."
            )
        else:
            notes.append(
                "For `codex exec` (nobody there to approve a tool call), add --approve-tools."
            )
    if target.host == "claude-code":
        notes.append(
            "`claude -p` runs only the tools it is told to: add --allowedTools mcp__NAME "
            "(NAME: the server's name)."
        )
    if server is PORTABLE or server.command == PORTABLE.command:
        notes.append(
            "The entry runs `deskhandctl` from PATH and the daemon's default socket, so it "
            "works on every machine with Deskhand installed; check the file in."
        )
    for key, value in server.env:
        notes.append(f"{key}={value} is passed on so the server finds the daemon you use now.")
    return notes


# ----- reading and checking the file -----------------------------------------------------------


def _own_regular(path: Path, what: str) -> os.stat_result:
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise Refusal(f"{what} {path} is not a regular file")
    if st.st_uid != os.getuid():
        raise Refusal(f"{what} {path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()})")
    if st.st_size > MAX_BYTES:
        raise Refusal(f"{what} {path} is larger than {MAX_BYTES} bytes")
    return st


def real_file(path: Path) -> Path:
    """The file to edit for ``path``: itself, or where a trustworthy symlink points."""
    if not path.is_symlink():
        if path.exists():
            _own_regular(path, "the config file")
        return path
    real = Path(os.path.realpath(path))
    if not real.exists():
        raise Refusal(f"{path} is a symbolic link to {real}, which does not exist")
    _own_regular(real, f"{path} is a symbolic link; its target")
    parent = real.parent.stat()
    if parent.st_uid != os.getuid() or stat.S_IMODE(parent.st_mode) & 0o022:
        raise Refusal(
            f"{path} is a symbolic link into {real.parent}, a directory that is not yours "
            "alone; edit the file there by hand or replace the link"
        )
    return real


def _read(path: Path) -> tuple[bytes, int] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise Refusal(f"{path} changed under us; try again")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise Refusal(f"{path} is larger than {MAX_BYTES} bytes")
    return data, stat.S_IMODE(st.st_mode)


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text


# ----- JSON ------------------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise Refusal(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def edit_json(path: Path, text: str, key: str, name: str, entry: dict[str, Any]) -> str:
    """The file's new text with ``entry`` as ``[key][name]``; everything else kept in order."""
    body = text.removeprefix("\ufeff")
    if body.strip():
        try:
            doc = json.loads(body, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise Refusal(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                "comments and trailing commas count too"
            ) from None
        except Refusal as exc:
            raise Refusal(f"{path}: {exc}; rewriting it would lose one of them") from None
    else:
        doc = {}  # an empty file, e.g. made with touch
    if not isinstance(doc, dict):
        raise Refusal(f"{path} holds a JSON {type(doc).__name__}, not an object")
    servers = doc.setdefault(key, {})
    if not isinstance(servers, dict):
        raise Refusal(f'"{key}" in {path} is a {type(servers).__name__}, not an object')
    old = servers.get(name)
    if old is not None and not isinstance(old, dict):
        raise Refusal(f'"{key}"."{name}" in {path} is a {type(old).__name__}, not an object')
    servers[name] = entry
    return json_dump(doc)


# ----- TOML (Codex) ----------------------------------------------------------------------------


def _skip_string(line: str, i: int, quote: str) -> int:
    """Index after the single-line string starting at ``line[i]``."""
    i += 1
    while i < len(line):
        if quote == '"' and line[i] == "\\":
            i += 2
            continue
        if line[i] == quote:
            return i + 1
        i += 1
    return i


def _close_multiline(line: str, i: int, delim: str) -> int | None:
    """Index after the closing ``delim`` at or after ``i``, or None if the line has none."""
    while i < len(line):
        if delim == '"""' and line[i] == "\\":
            i += 2
            continue
        if line.startswith(delim, i):
            i += 3
            for _ in range(2):  # up to two quotes of the content may precede the closing three
                if line.startswith(delim[0], i):
                    i += 1
            return i
        i += 1
    return None


def toml_headers(lines: list[str]) -> list[tuple[int, tuple[str, ...]]]:
    """(line index, key path) of every table and array-of-tables header.

    A header is a line that starts with ``[`` outside strings and outside any array or inline
    table still open; multi-line strings and arrays are tracked so their contents never count.
    """
    headers: list[tuple[int, tuple[str, ...]]] = []
    multiline: str | None = None
    depth = 0
    for index, line in enumerate(lines):
        i = 0
        if multiline is not None:
            end = _close_multiline(line, 0, multiline)
            if end is None:
                continue
            multiline, i = None, end
        elif depth == 0 and line.lstrip().startswith("["):
            headers.append((index, _header_path(line)))
            continue
        while i < len(line):
            ch = line[i]
            if ch == "#":
                break
            if ch in "\"'":
                if line.startswith(ch * 3, i):
                    end = _close_multiline(line, i + 3, ch * 3)
                    if end is None:
                        multiline = ch * 3
                        break
                    i = end
                else:
                    i = _skip_string(line, i, ch)
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
            i += 1
    return headers


def _header_path(line: str) -> tuple[str, ...]:
    # tomllib reads the header line on its own: it handles quoting, spaces and comments.
    node: Any = tomllib.loads(line)
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        path.append(key)
        if isinstance(node, list):
            node = node[-1]
    return tuple(path)


def _without_entry(doc: dict[str, Any], name: str) -> dict[str, Any]:
    rest = dict(doc)
    servers = rest.get("mcp_servers")
    if isinstance(servers, dict):
        servers = {k: v for k, v in servers.items() if k != name}
        if servers:
            rest["mcp_servers"] = servers
        else:
            del rest["mcp_servers"]
    return rest


def edit_toml(path: Path, text: str, name: str, server: Server) -> str:
    """The file's new text: our table and its ``.env`` replaced or appended, nothing else."""
    try:
        old_doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Refusal(f"{path} is not valid TOML ({exc})") from None
    servers = old_doc.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise Refusal(f"mcp_servers in {path} is not a table")
    if name in servers and not isinstance(servers[name], dict):
        raise Refusal(f"mcp_servers.{name} in {path} is not a table")
    newline = "\r\n" if "\r\n" in text else "\n"
    ours = toml_entry(name, server, newline)
    lines = text.splitlines(keepends=True)
    headers = toml_headers(lines)
    starts = [index for index, _ in headers] + [len(lines)]
    pieces: list[str] = []
    slot: int | None = None  # where our entry goes: in place of the first of our tables
    cursor = 0
    for n, (start, header) in enumerate(headers):
        if header[:2] != ("mcp_servers", name) or header[2:] not in ((), ("env",)):
            continue
        end = starts[n + 1]
        # Comment lines just before the next header belong to what follows; blank lines
        # after our table are ours, so that the entry keeps one blank line after it.
        while end > start + 1 and (not lines[end - 1].strip() or _is_comment(lines[end - 1])):
            end -= 1
        while end < starts[n + 1] and not lines[end].strip():
            end += 1
        pieces += lines[cursor:start]
        if slot is None:
            slot = len(pieces)
            pieces.append("")
        cursor = end
    pieces += lines[cursor:]
    if slot is None:
        new = "".join(pieces)
        if new and not new.endswith(("\n", "\r")):
            new += newline
        if new.strip() and not new.endswith(("\n\n", "\r\n\r\n")):
            new += newline  # one blank line before our table
        new += ours
    else:
        follows = "".join(pieces[slot + 1 :]).strip()
        pieces[slot] = ours + (newline if follows else "")
        new = "".join(pieces)
    _check_toml(path, new, old_doc, name, server)
    return new


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


_TOML_OURS = ("command", "args", "tool_timeout_sec", "default_tools_approval_mode", "env")
"""The keys of our Codex table that this command writes (others in it are the person's)."""


def _check_toml(path: Path, new: str, old_doc: dict[str, Any], name: str, server: Server) -> None:
    manual = (
        f"mcp_servers.{name} in {path} is written in a form this command does not edit "
        "(an inline table or dotted keys); change it by hand to the entry printed without --write"
    )
    try:
        new_doc = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        raise Refusal(manual) from None
    entry = new_doc.get("mcp_servers", {}).get(name, {})
    mine = {k: v for k, v in entry.items() if k in _TOML_OURS}
    if mine != toml_expected(server) or _without_entry(old_doc, name) != _without_entry(
        new_doc, name
    ):
        raise Refusal(manual)


# ----- writing ---------------------------------------------------------------------------------


def backup(path: Path, data: bytes, mode: int) -> Path:
    """A copy of the old file beside it, with its mode: ``<file>.bak-<timestamp>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        candidate = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n else ""))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(candidate, flags, 0o600)
        except FileExistsError:
            continue
        fill(fd, data, mode)
        return candidate
    raise Refusal(f"too many backups of {path} this second; try again")


def replace_atomically(path: Path, data: bytes, mode: int, expect: bytes | None) -> None:
    """Swap ``data`` in at ``path`` with a rename; refuse if the file moved on from ``expect``."""
    temp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600)
    try:
        fill(fd, data, mode)
        now = _read(path)
        if (now[0] if now else None) != expect:
            raise Refusal(f"{path} changed while it was being edited; nothing written, try again")
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def has_entry(target: Target, text: str, name: str, server: Server) -> bool:
    """Whether the file already holds exactly this entry, however it is laid out: a host that
    rewrites its file (Claude Code drops the final newline and reorders nothing else) must not
    make a second run report a change and leave another backup."""
    try:
        if target.is_toml:
            entry = tomllib.loads(text).get("mcp_servers", {}).get(name)
            wanted: dict[str, Any] = toml_expected(server)
        else:
            entry = json.loads(text.removeprefix("\ufeff")).get(target.key, {}).get(name)
            wanted = json_entry(target.host, server)
    except (ValueError, AttributeError):  # not parseable, or not objects: edit_* explains
        return False
    if not isinstance(entry, dict):
        return False
    if target.is_toml:  # keys of the person's own in our table stay theirs
        # ...but all of ours count: an approval mode written before and not asked for now
        # is a change (the edit drops it), not "already there".
        entry = {k: v for k, v in entry.items() if k in _TOML_OURS}
    return entry == wanted


def write_entry(target: Target, name: str, server: Server) -> None:
    path = real_file(target.path)
    found = _read(path)
    project = target.scope == "project"
    new_mode = PROJECT_FILE_MODE if project else NEW_FILE_MODE
    old, mode = found if found is not None else (None, new_mode)
    text = _decode(path, old) if old is not None else ""
    if old is not None and has_entry(target, text, name, server):
        print(f"{path} already has this entry for {name!r}; nothing written.")
        return
    if target.is_toml:
        new = edit_toml(path, text, name, server)
    else:
        new = edit_json(path, text, target.key, name, json_entry(target.host, server))
    path.parent.mkdir(
        mode=PROJECT_DIR_MODE if project else NEW_DIR_MODE, parents=True, exist_ok=True
    )
    saved = backup(path, old, mode) if old is not None else None
    replace_atomically(path, new.encode(), mode, old)
    if path != target.path:
        print(f"{target.path} is a symbolic link to {path}; edited the file it points to.")
    if saved is None:
        print(f"Created {path} (mode {mode:04o}) with the entry {name!r}:")
        print(new, end="")
        return
    print(f"Updated {path} (mode {mode:04o} kept); the old file is {saved}")
    diff = list(
        difflib.unified_diff(
            text.splitlines(), new.splitlines(), "before", "after", lineterm="", n=2
        )
    )
    for line in diff[:DIFF_LINES]:
        print(line)
    if len(diff) > DIFF_LINES:
        print(f"... and {len(diff) - DIFF_LINES} more lines of difference")


# ----- command line ----------------------------------------------------------------------------


def configure(args: Args) -> int:
    """``mcp config``'s handler (named in the grammar table, whose check has already refused a
    scope the host lacks, a bad ``--name`` and ``--write`` for another platform)."""
    params = args.params
    host = str(params["host"])
    chosen_scope = params.get("scope")
    chosen_name = params.get("name")
    platform = params.get("platform")
    write = bool(params.get("write"))
    name = chosen_name if isinstance(chosen_name, str) else DEFAULT_NAME
    scope = chosen_scope if isinstance(chosen_scope, str) else "user"
    running = "macos" if paths.is_macos() else "linux"
    macos = (platform or running) == "macos"
    env = os.environ
    try:
        approve = bool(params.get("approve_tools"))
        # A project's file is checked in and shared: it gets nothing of this machine.
        server = PORTABLE if scope == "project" else server_for(env, macos=macos)
        if approve:
            server = dataclasses.replace(server, approve_tools=True)
        target = target_for(host, scope, env, macos=macos, cwd=Path.cwd())
        if not write:
            rerun = ["deskhandctl", "mcp", "config", "--host", host]
            if chosen_scope:
                rerun += ["--scope", scope]
            if name != DEFAULT_NAME:
                rerun += ["--name", name]
            if approve:  # the offered --write must write the entry printed
                rerun.append("--approve-tools")
            print_entry(target, name, server, rerun)
            return 0
        write_entry(target, name, server)
    except Refusal as exc:
        print(f"{PROG}: {exc}; nothing was written", file=sys.stderr)
        return 1
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{PROG}: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for note in _notes(target, server):
        print(f"Note: {note}")
    return 0

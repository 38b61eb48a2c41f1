"""``deskhandctl service install|uninstall [--dry-run] [--platform linux|macos]``.

Owns handing deskhand-d to the user's service manager: choosing the daemon command of this
installation, rendering the systemd user units or the LaunchAgent for the current user,
writing and removing those files, and driving ``systemctl --user`` or ``launchctl``. The
templates belong to :mod:`deskhandctl.setup.units`; every path convention (unit directories,
socket, label) comes from :mod:`deskhand_d.paths`.

Theory of operation: a run first builds a :class:`Plan` (directories, files, commands,
warnings; no side effects), then prints it (``--dry-run``) or carries it out in this order:
check that the service manager answers, run the ``before`` commands (uninstall stops the
service first), change the files, run the ``after`` commands, and on macOS check that launchd
started the agent. Every message says what was done, not what was planned.

On macOS 13 and later an agent can be installed and still never run: its background item
switched off under System Settings → General → Login Items ("Allow in the Background") makes
``launchctl bootstrap`` fail with EIO, or leaves the job loaded and never started; either is
explained with that fix (``background_not_allowed``). An installation inside a folder macOS
guards with a privacy prompt (Desktop, Documents, Downloads, iCloud Drive) is warned about
(``protected_folder``): launchd's Python could not read it without a prompt naming Python.

When the service manager cannot be reached (no systemd user instance, e.g. over ssh or in a
container; no GUI login on macOS), ``install`` writes nothing: files no manager reads would
only look like an installation, and ``deskhandctl`` starts the daemon on demand without them.
``uninstall`` still removes the files (that is what was asked) and says the manager could
not be told.

The command line is read by :mod:`deskhandctl.cli.parser` (the ``service`` entry of the grammar
table names :func:`install` and :func:`uninstall` as the handlers).

Exit status: 0 when done (for ``uninstall`` also when the files are removed but no service
manager could be told); 1 when a file could not be written or removed, a service-manager
command failed, or launchd loaded the agent but did not start it; 2 for bad usage (from the
parser, or no service manager this platform has and no ``--platform``); 69
(EX_UNAVAILABLE) when ``install`` found no service manager to hand the daemon to, and so
changed nothing.
"""

from __future__ import annotations

import enum
import itertools
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deskhand_d import paths
from deskhandctl.setup import units
from deskhandctl.setup.units import linux_socket_text, macos_log_dir, macos_socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args

PROG = "deskhandctl service"
UNIT_MODE = 0o644
PRIVATE_DIR_MODE = 0o700
RETRY_PAUSE_S = 1.0  # between attempts of a Command with retry_s > 0
BOOTSTRAP_RETRY_S = 15.0  # launchd refuses a label for a few seconds after its bootout
RUN_CHECK_S = 10.0  # how long launchd gets to start the agent (RunAtLoad) before we say so
RUN_CHECK_PAUSE_S = 0.5
NO_MANAGER = 69  # sysexits EX_UNAVAILABLE, as deskhandctl uses it for "no daemon"


class Platform(enum.Enum):
    LINUX = "linux"
    MACOS = "macos"


@dataclass(frozen=True, slots=True)
class Command:
    argv: tuple[str, ...]
    may_fail: bool = False  # e.g. unloading a job that is not loaded
    retry_s: float = 0.0  # keep retrying a failure this long (launchd's bootout settles late)

    def __str__(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything one ``install`` or ``uninstall`` does, in execution order."""

    action: str
    probe: Command  # harmless; failing means the service manager is out of reach
    before: tuple[Command, ...] = ()
    private_dirs: tuple[Path, ...] = ()
    writes: tuple[tuple[Path, str], ...] = ()
    removes: tuple[Path, ...] = ()
    after: tuple[Command, ...] = ()
    # To finish by hand once the files are changed: where a manager runs, or after a
    # `before` command failed (its own commands may no longer apply to the changed files).
    manual: tuple[Command, ...] = ()
    done: str = ""
    # Prints the job once loaded, to check that launchd started it (macOS install).
    verify: Command | None = None
    warnings: tuple[str, ...] = ()  # for the person, whatever the outcome


def running_platform() -> Platform | None:
    if sys.platform == "darwin":
        return Platform.MACOS
    if sys.platform.startswith("linux"):
        return Platform.LINUX
    return None


def daemon_command(executable: str = sys.executable) -> list[str]:
    """The absolute daemon command of the installation ``executable`` belongs to.

    The ``deskhand-d`` console script next to the interpreter when there is one, else the
    interpreter with ``-P -m deskhand_d`` (``-P``: a service starts in the home directory,
    which must not be able to shadow modules).
    """
    exe = Path(os.path.abspath(executable))  # not resolve(): a venv's python is a symlink
    script = exe.with_name("deskhand-d")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(exe), "-P", "-m", "deskhand_d"]


def _systemctl(*args: str, may_fail: bool = False) -> Command:
    return Command(("systemctl", "--user", *args), may_fail=may_fail)


def _launchctl(*args: str, may_fail: bool = False, retry_s: float = 0.0) -> Command:
    return Command(("launchctl", *args), may_fail=may_fail, retry_s=retry_s)


def plan_install(platform: Platform, env: Mapping[str, str], command: Sequence[str]) -> Plan:
    """What ``install`` does; raises :class:`units.RenderError` for an unusable path."""
    if platform is Platform.LINUX:
        unit_dir = paths.systemd_user_dir(dict(env))
        enable = (_systemctl("daemon-reload"), _systemctl("enable", "--now", paths.SYSTEMD_SOCKET))
        return Plan(
            action="install",
            probe=Command(units.manager_probe(macos=False)),
            writes=(
                (unit_dir / paths.SYSTEMD_SERVICE, units.render_service(command)),
                (unit_dir / paths.SYSTEMD_SOCKET, units.render_socket()),
            ),
            after=enable,
            done=(
                f"Deskhand is installed: systemd listens on {linux_socket_text(env)} and "
                "starts the daemon on the first connection.\n"
                "Logs: journalctl --user -u deskhand.service\n"
                "If the daemon was already running, restart it to use the new unit: "
                "systemctl --user restart deskhand.service"
            ),
        )
    sock, log_dir = macos_socket(env), macos_log_dir(env)
    plist = paths.launch_agents_dir(dict(env)) / units.PLIST_NAME
    domain = f"gui/{os.getuid()}"
    job = f"{domain}/{paths.LAUNCHD_LABEL}"
    load = (
        _launchctl("bootout", job, may_fail=True),  # a loaded older copy; fine if none
        _launchctl("enable", job),  # undo an earlier `launchctl disable`
        # Right after a bootout launchd may refuse the label for a few seconds (EIO).
        _launchctl("bootstrap", domain, str(plist), retry_s=BOOTSTRAP_RETRY_S),
    )
    home = env.get("HOME") or str(Path.home())
    return Plan(
        action="install",
        probe=Command(units.manager_probe(macos=True)),
        private_dirs=(log_dir, sock.parent),
        writes=((plist, units.render_plist(command, str(sock), str(log_dir))),),
        after=load,
        done=(
            f"Deskhand is installed: launchd listens on {sock} and keeps the daemon running "
            "while you are logged in.\n"
            f"Logs: {log_dir / units.LOG_FILE_NAME}" + _temp_socket_note(sock, env)
        ),
        verify=_launchctl("print", job),
        warnings=_protected_warnings(command, home),
    )


def _protected_warnings(command: Sequence[str], home: str) -> tuple[str, ...]:
    """A warning when what launchd's Python must read lies in a privacy-protected folder."""
    package = Path(paths.__file__).parent
    places = (
        ("the daemon command", command[0]),
        ("the daemon command", os.path.realpath(command[0])),
        ("the Python environment", sys.prefix),
        ("the Python environment", os.path.realpath(sys.prefix)),
        ("Deskhand's code", os.path.realpath(package)),
    )
    for what, where in places:
        folder = units.protected_folder(where, home)
        if folder is not None:
            return (
                f"{PROG}: protected_folder: {what} ({where}) is in your {folder} folder, "
                "which macOS guards with a privacy prompt: started by launchd, the daemon's "
                "Python would need your permission to read it (a prompt naming Python, and no "
                "start at all while nobody answers). Put Deskhand's virtual environment (and "
                "any checkout it runs from) outside Desktop, Documents, Downloads and iCloud "
                "Drive, for example `python3 -m venv ~/.local/share/deskhand-venv`, install "
                "Deskhand there and run `deskhandctl service install` from it.",
            )
    return ()


def _temp_socket_note(sock: Path, env: Mapping[str, str]) -> str:
    library = paths.launch_agents_dir(dict(env)).parent
    if sock.is_relative_to(library):
        return ""
    return (
        f"\nNote: a socket under {library} would be too long for macOS, so it is in your temp "
        "folder, which macOS may clean; if clients stop finding the daemon, run "
        "`deskhandctl service install` again."
    )


def plan_uninstall(platform: Platform, env: Mapping[str, str]) -> Plan:
    """What ``uninstall`` does: stop and disable, then remove the files that exist."""
    if platform is Platform.LINUX:
        unit_dir = paths.systemd_user_dir(dict(env))
        candidates = (
            unit_dir / paths.SYSTEMD_SERVICE,
            unit_dir / paths.SYSTEMD_SOCKET,
            # `disable` removes these; listed for when systemctl cannot be reached.
            unit_dir / "sockets.target.wants" / paths.SYSTEMD_SOCKET,
            unit_dir / "default.target.wants" / paths.SYSTEMD_SERVICE,
        )
        unit_names = (paths.SYSTEMD_SOCKET, paths.SYSTEMD_SERVICE)
        return Plan(
            action="uninstall",
            probe=Command(units.manager_probe(macos=False)),
            before=(_systemctl("disable", "--now", *unit_names),),
            removes=tuple(p for p in candidates if os.path.lexists(p)),
            after=(_systemctl("daemon-reload"),),
            manual=(_systemctl("stop", *unit_names), _systemctl("daemon-reload")),
            done=(
                "Deskhand's systemd units are removed; its config and state are kept. "
                "deskhandctl starts deskhand-d on demand again."
            ),
        )
    plist = paths.launch_agents_dir(dict(env)) / units.PLIST_NAME
    domain = f"gui/{os.getuid()}"
    unload = (_launchctl("bootout", f"{domain}/{paths.LAUNCHD_LABEL}", may_fail=True),)
    return Plan(
        action="uninstall",
        probe=Command(units.manager_probe(macos=True)),
        before=unload,
        removes=(plist,) if os.path.lexists(plist) else (),
        manual=unload,
        done=(
            "Deskhand's LaunchAgent is removed; its config, state and logs "
            f"({macos_log_dir(env)}) are kept. deskhandctl starts deskhand-d on demand again."
        ),
    )


def print_dry_run(plan: Plan) -> None:
    """Print exactly what :func:`carry_out` would do, without doing any of it."""
    print(f"{PROG} {plan.action} --dry-run: nothing has been written, removed or run.\n")
    unreachable = "nothing is written" if plan.writes else "the files are still removed"
    print(f"=== would check that the service manager answers (if not, {unreachable}) ===")
    print(f"$ {plan.probe}")
    if plan.before:
        print("=== would run ===")
        print("\n".join(f"$ {c}" for c in plan.before))
    for d in plan.private_dirs:
        print(f"=== would create directory {d} (mode {PRIVATE_DIR_MODE:04o}) ===")
    for path, text in plan.writes:
        print(f"=== would write {path} (mode {UNIT_MODE:04o}) ===")
        sys.stdout.write(text)
    for path in plan.removes:
        print(f"=== would remove {path} ===")
    if plan.after:
        print("=== would run ===")
        print("\n".join(f"$ {c}" for c in plan.after))
    if plan.verify is not None:
        print("=== would then check that launchd started the daemon ===")
        print(f"$ {plan.verify}")
    for warning in plan.warnings:
        print(warning, file=sys.stderr)


@dataclass(frozen=True, slots=True)
class Failure:
    """A command that failed for real: its exit status and what it said."""

    command: Command
    code: int
    detail: str


def _call(cmd: Command, env: Mapping[str, str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one service-manager command; -1 when it cannot run."""
    try:
        done = subprocess.run(cmd.argv, env=env, capture_output=True, text=True, check=False)
    except OSError as exc:
        return -1, "", str(exc.strerror)
    return done.returncode, done.stdout, done.stderr


def _run(commands: Sequence[Command]) -> tuple[list[Command], Failure | None]:
    """Run in order; on the first real failure, return it and everything from it on."""
    env = units.manager_env(os.environ)  # no secret of Deskhand's for the service manager
    for i, cmd in enumerate(commands):
        deadline = time.monotonic() + cmd.retry_s
        for attempt in itertools.count():
            code, out, err = _call(cmd, env)
            detail = (err or out).strip()
            if code == 0 or time.monotonic() >= deadline:
                break
            if attempt == 0:
                print(f"'{cmd}' failed ({detail or code}); retrying for up to {cmd.retry_s:g} s")
            time.sleep(RETRY_PAUSE_S)
        if code == 0:
            print(f"ran: {cmd}")
        elif cmd.may_fail:
            print(f"ran: {cmd} (exit {code}, which is fine here)")
        else:
            print(f"{PROG}: '{cmd}' failed with exit status {code}", file=sys.stderr)
            if detail:
                print(detail, file=sys.stderr)
            return list(commands[i:]), Failure(cmd, code, detail)
    return [], None


def _explain_background(failure: Failure) -> None:
    """``bootstrap`` still refused with EIO after the retries: on macOS 13 and later, the
    agent's background item is switched off."""
    if not units.background_refused(failure.command.argv, failure.code, failure.detail):
        return
    print(
        f"{PROG}: background_not_allowed: launchd kept refusing to load the agent (EIO) after "
        f"retrying for {failure.command.retry_s:g} s. On macOS 13 and later it does this when "
        f"Deskhand's background item is switched off: {units.BACKGROUND_FIX}. If it is on, "
        f"check the file with `plutil -lint {failure.command.argv[-1]}`.",
        file=sys.stderr,
    )


def _never_started(verify: Command) -> bool:
    """Whether launchd loaded the agent but has not started it within :data:`RUN_CHECK_S`
    (RunAtLoad starts it at once). Only an explicit ``runs = 0`` counts: a job launchctl cannot
    print, or a text without the count, proves nothing either way."""
    env = units.manager_env(os.environ)
    deadline = time.monotonic() + RUN_CHECK_S
    while True:
        code, out, _ = _call(verify, env)
        runs = units.launchd_runs(out) if code == 0 else None
        if runs != 0:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(RUN_CHECK_PAUSE_S)


def _write(path: Path, text: str) -> None:
    """Replace ``path`` atomically, so a failed write never leaves half a unit behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    replaced = False
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            os.fchmod(f.fileno(), UNIT_MODE)
        os.replace(tmp, path)
        replaced = True
    finally:
        if not replaced:
            Path(tmp).unlink(missing_ok=True)


def _change_files(plan: Plan) -> None:
    for d in plan.private_dirs:
        if not d.is_dir():
            d.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
            d.chmod(PRIVATE_DIR_MODE)  # mkdir's mode went through the umask
            print(f"created {d}")
    for path, text in plan.writes:
        _write(path, text)
        print(f"wrote {path}")
    for path in plan.removes:
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # `disable` already removed it
        print(f"removed {path}")


def _print_commands(intro: str, commands: Sequence[Command]) -> None:
    print(intro, file=sys.stderr)
    for cmd in commands:
        note = "   # an error saying it is not loaded is fine" if cmd.may_fail else ""
        print(f"  {cmd}{note}", file=sys.stderr)


def _files_state(plan: Plan) -> str:
    return "The files are written" if plan.writes else "The files are removed"


def _refuse_install(plan: Plan, reason: str) -> int:
    """No service manager answers: install nothing, and say how the daemon starts instead."""
    err = sys.stderr
    print(
        f"{PROG}: nothing was installed: the service manager cannot be reached ({reason}).",
        file=err,
    )
    print(
        "Service files that no service manager reads would never start the daemon, so none "
        "were written.",
        file=err,
    )
    earlier = [path for path, _ in plan.writes if os.path.lexists(path)]
    if earlier:
        print(
            "The files of an earlier installation are left as they were: "
            + ", ".join(map(str, earlier))
            + f". '{PROG} uninstall' removes them.",
            file=err,
        )
    print(
        "You do not need the service to use Deskhand here: deskhandctl starts deskhand-d on "
        "demand (try 'deskhandctl status').\n"
        f"To hand the daemon to the service manager, run '{PROG} install' again from a "
        f"terminal in your desktop session, where '{plan.probe}' works.",
        file=err,
    )
    return NO_MANAGER


def carry_out(plan: Plan) -> int:
    """Do what the plan says; returns the exit status."""
    reason = units.manager_unreachable(plan.probe.argv, os.environ)
    if reason is not None and plan.writes:
        return _refuse_install(plan, reason)
    failed_before = _run(plan.before)[0] if reason is None else []
    try:
        _change_files(plan)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{PROG}: {plan.action} failed: {exc.strerror}{where}", file=sys.stderr)
        print("Fix the cause and run the same command again.", file=sys.stderr)
        return 1
    if reason is not None:
        # Uninstall without a manager: the files are gone, which is what was asked; only a
        # manager running elsewhere (a desktop login) may still have Deskhand loaded.
        print(plan.done)
        print(
            f"{PROG}: the service manager cannot be reached ({reason}), so it was not told.",
            file=sys.stderr,
        )
        _print_commands(
            "Should a service manager in another session (your desktop login) still run "
            "deskhand-d, stop it there with:",
            plan.manual,
        )
        return 0
    if failed_before:
        # `disable` needs the unit files just removed; offer what works without them.
        _print_commands(
            f"{_files_state(plan)}, but the service manager did not take the step above. "
            "To finish, fix the error and run:",
            plan.manual,
        )
        return 1
    failed_after, failure = _run(plan.after)
    if failed_after:
        if failure is not None:
            _explain_background(failure)
        _print_commands(
            f"{_files_state(plan)}. To finish, fix the error above and run:", failed_after
        )
        return 1
    if plan.verify is not None and _never_started(plan.verify):
        print(
            f"{PROG}: background_not_allowed: launchd loaded the agent but has not started "
            f"the daemon within {RUN_CHECK_S:g} s ('{plan.verify}' says runs = 0). On macOS 13 "
            "and later this is what happens when Deskhand's background item is switched off: "
            f"{units.BACKGROUND_FIX}. Until then clients find no daemon.",
            file=sys.stderr,
        )
        return 1
    print(plan.done)
    return 0


def _socket_override_note(platform: Platform, env: Mapping[str, str]) -> str | None:
    override = env.get("DESKHAND_SOCKET")
    if not override:
        return None
    served = str(macos_socket(env)) if platform is Platform.MACOS else linux_socket_text(env)
    if override == served:
        return None
    return (
        f"note: DESKHAND_SOCKET is set to {override}, but the service listens on {served}; "
        "unset DESKHAND_SOCKET (or point it there) so clients find the service."
    )


def install(args: Args) -> int:
    """``service install``'s handler (named in the grammar table)."""
    return _main("install", args)


def uninstall(args: Args) -> int:
    """``service uninstall``'s handler (named in the grammar table)."""
    return _main("uninstall", args)


def _main(action: str, args: Args) -> int:
    """Plan ``action`` for the platform asked for (else this one), then print or carry it out."""
    chosen = args.params.get("platform")
    dry_run = bool(args.params.get("dry_run"))
    platform = Platform(chosen) if isinstance(chosen, str) else running_platform()
    if platform is None:
        print(
            f"{PROG}: {sys.platform} has neither systemd user units nor launchd; start "
            "deskhand-d yourself, or pass --platform linux|macos to see the files.",
            file=sys.stderr,
        )
        return 2
    env = os.environ
    try:
        if action == "install":
            plan = plan_install(platform, env, daemon_command())
        else:
            plan = plan_uninstall(platform, env)
    except units.SocketPathTooLong as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except units.RenderError as exc:
        print(f"{PROG}: cannot render the service files: {exc}", file=sys.stderr)
        print("Install Deskhand under a path without such characters.", file=sys.stderr)
        return 1
    if action == "uninstall" and not plan.removes:
        print("Deskhand's service is not installed here; nothing to remove.")
        return 0
    if dry_run:
        print_dry_run(plan)
        return 0
    status = carry_out(plan)
    note = _socket_override_note(platform, env) if action == "install" else None
    if note and status == 0:
        print(note, file=sys.stderr)
    for warning in plan.warnings:
        print(warning, file=sys.stderr)
    return status

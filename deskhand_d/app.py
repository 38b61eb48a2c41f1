"""The composition root: builds every long-lived part of the daemon and owns the nursery.

Start-up order: config is already loaded by ``__main__``; get the listening socket (inherited
from systemd or launchd, else bound privately); start the RPC server with ``nursery.start`` so
it is accepting before anything else happens; only then report ``READY=1``. A stop (SIGTERM,
SIGINT or the ``shutdown`` op) sends every client a going-away close, cancels outstanding
work, unlinks the socket we created and flushes the logs, all within the configured grace.
SIGUSR1 is not a stop of the daemon but the emergency stop (cancel everything, close the
backend, lock), the way in for ``deskhandctl stop`` when the socket cannot serve it; the pid
file it needs (``pidfile.py``) is written once that signal is handled, and each such stop is
confirmed in ``<socket>.stops`` once the lock is engaged (a signal has no reply).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path

import structlog
import trio

from deskhand_d import __version__, activation, childenv, paths, pidfile, rlimits, unixsock
from deskhand_d import log as logsetup
from deskhand_d.audit import AuditEntry, AuditLog
from deskhand_d.backends import launchers
from deskhand_d.backends.mcpclient.connection import BackendConnection, LaunchSpec, open_backend
from deskhand_d.config import Config
from deskhand_d.consent import platforms
from deskhand_d.consent.gate import ConsentGate
from deskhand_d.consent.grants import GrantsFile, GrantsStore, default_grants_path
from deskhand_d.errors import EX_UNAVAILABLE, DeskhandError, StartupError
from deskhand_d.jev.access import JevAccess
from deskhand_d.native.queue import ActionQueue
from deskhand_d.native.service import NativeService
from deskhand_d.native.sessions import SessionManager
from deskhand_d.native.turnbudget import TurnBudget
from deskhand_d.ops.hub import Hub
from deskhand_d.ops.questions import Questions
from deskhand_d.ops.services import Services
from deskhand_d.rpc.server import RpcServer

log = structlog.get_logger("deskhand.daemon")


def obtain_listener(
    cfg: Config, env: MutableMapping[str, str]
) -> tuple[socket.socket, unixsock.BoundSocket]:
    """The listening socket: inherited from a service manager, else bound by us."""
    inherited = activation.systemd_listener(env) or activation.launchd_listener()
    if inherited is not None:
        path = activation.inherited_path(inherited) or cfg.socket_path(env)
        log.info("socket.inherited", socket=str(path))
        return inherited, unixsock.BoundSocket(sock=inherited, path=path, identity=None)
    if paths.is_macos() and not cfg.daemon.socket:
        # The default directory is ~/Library/Application Support/Deskhand/run; a fresh
        # account has no Deskhand folder there yet (its parent is checked like any other).
        folder = paths.runtime_dir(env).parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StartupError(
                f"cannot create {folder} for the socket: {exc.strerror}; check that your "
                "Library folder is yours and writable, or choose a socket with --socket",
                exit_code=EX_UNAVAILABLE,
            ) from None
    bound = unixsock.bind_private(cfg.socket_path(env))
    return bound.sock, bound


async def _watch_signals(
    signals: AsyncIterator[int],
    hub: Hub,
    native: Callable[[], NativeService | None],
    confirmed: _StopsBySignal,
    *,
    task_status: trio.TaskStatus[None],
) -> None:
    async with trio.open_nursery() as stops:
        task_status.started()
        async for signum in signals:
            if signum == pidfile.EMERGENCY_STOP_SIGNAL:
                stops.start_soon(_emergency_stop_by_signal, native(), confirmed)
            else:
                hub.request_shutdown(signal.Signals(signum).name)


class _StopsBySignal:
    """Counts emergency stops sent as a signal and confirms each in ``<socket>.stops``
    (``deskhand_d/pidfile.py``): a signal has no reply, and the sender must know it worked."""

    def __init__(self) -> None:
        self.count = 0
        self.record: pidfile.StopsRecord | None = None

    def open(self, socket_path: Path) -> None:
        try:
            self.record = pidfile.StopsRecord(socket_path)
        except (OSError, ValueError) as exc:
            log.warning("stops_file.unavailable", error=str(exc))

    def confirm(self) -> None:
        self.count += 1
        if self.record is None:
            return
        try:
            self.record.record(self.count)
        except OSError as exc:
            log.warning("native.emergency_stop_unconfirmed", error=str(exc))

    def close(self) -> None:
        if self.record is not None:
            self.record.close()
            self.record = None


async def _emergency_stop_by_signal(
    native: NativeService | None, confirmed: _StopsBySignal
) -> None:
    name = pidfile.EMERGENCY_STOP_SIGNAL.name
    if native is None:  # only before start-up finished; the pid file is not written yet
        log.warning("native.emergency_stop_too_early", signal=name)
        return
    await native.emergency_stop(f"signal {name}")
    confirmed.confirm()


def _raise_open_files_limit() -> None:
    change = rlimits.raise_open_files()
    hard = "unlimited" if change.hard is None else change.hard
    if change.error:
        log.warning("rlimit.nofile", soft=change.before, hard=hard, error=change.error)
    else:
        log.info("rlimit.nofile", soft_was=change.before, soft=change.after, hard=hard)


@asynccontextmanager
async def open_services(
    cfg: Config,
    env: MutableMapping[str, str],
    *,
    socket_path: Path,
    hub: Hub | None = None,
    managed_by: str = "",
) -> AsyncIterator[Services]:
    """Every service the ops use, built and running (the backend connection, sessions and
    their expiry, the action queue's worker, questions, the audit log, consent, Jev access);
    all of it stopped on exit. The backend process itself starts on first use."""
    secret_names = cfg.secrets.redact_env  # names: childenv drops them, their values, and more
    # Before anything can start a process: from here on every child's environment (the
    # backend, consent's tools, a launch) is built without them, whoever builds it.
    childenv.configure(secret_names)

    def launch() -> LaunchSpec:
        return launchers.resolve(cfg.backend, env, secret_names)

    jev = JevAccess(env)
    if jev.problem:
        log.warning("jev.key_unavailable", problem=jev.problem)
    try:
        async with (
            open_backend(
                launch,
                call_timeout_s=cfg.backend.call_timeout_s,
                start_timeout_s=cfg.backend.start_timeout_s,
            ) as backend,
            trio.open_nursery() as nursery,
        ):
            sessions = SessionManager(
                default_mode=cfg.native.default_mode,
                jev_key_present=jev.key_present,
                grace_s=cfg.native.session_grace_s,
                budget=TurnBudget(seconds=cfg.jev.turn_budget_s, actions=cfg.jev.turn_actions),
            )
            queue = ActionQueue(cfg.native.queue_depth)
            await nursery.start(queue.serve)
            backend_kind = await _backend_kind(cfg, backend)
            native = _native_service(cfg, env, backend, backend_kind, queue, sessions)
            nursery.start_soon(_expire_sessions, sessions, native)
            nursery.start_soon(_every_few_seconds, native)
            yield Services(
                config=cfg,
                env=env,
                socket_path=socket_path,
                hub=hub or Hub(),
                backend=backend,
                sessions=sessions,
                native=native,
                questions=Questions(),
                jev=jev,
                managed_by=managed_by,
            )
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await jev.aclose()


STARTUP_RESOLVE_S = 5.0


async def _backend_kind(cfg: Config, backend: BackendConnection) -> str:
    """The backend's kind, resolved now so that consent (the simulator gets the catalog
    platform) and ``status`` (which tells every client when the desktop is simulated) know it.
    Resolving may ask programs (Sky's codex); start-up does not wait on them for long: past
    ``STARTUP_RESOLVE_S`` the configured kind stands (``auto``: the OS's own platform, right for
    every kind but the simulator, which is resolved without asking anything), and the first
    call resolves it."""
    with trio.move_on_after(STARTUP_RESOLVE_S):
        try:
            return (await backend.resolve_launch()).kind
        except DeskhandError:  # e.g. Sky not installed: the backend reports that on first use
            pass
    return cfg.backend.kind


def _native_service(
    cfg: Config,
    env: MutableMapping[str, str],
    backend: BackendConnection,
    backend_kind: str,
    queue: ActionQueue,
    sessions: SessionManager,
) -> NativeService:
    """The native service with its audit log (or the reason it has none) and consent gate."""
    audit_problem = ""
    unfinished: list[AuditEntry] = []
    try:
        audit: AuditLog | None = AuditLog(paths.state_dir(env) / "audit")
        assert audit is not None
        unfinished = audit.recover()
    except (OSError, DeskhandError, StartupError) as exc:
        # Without an audit log nothing is dispatched (audit_unavailable), but the daemon
        # stays up so that status, doctor and the person can say what is wrong.
        audit_problem = getattr(exc, "message", None) or str(exc)
        log.error("audit.unavailable", error=audit_problem)
        audit = None
    if unfinished:
        log.warning("audit.unfinished_dispatches", count=len(unfinished))
    gate = ConsentGate(
        platform=platforms.for_config(cfg, backend_kind),
        store=GrantsStore(GrantsFile(default_grants_path(env))),
        # A grant given while no backend runs belongs to the process the next call starts.
        generation=lambda: backend.processes_started + (backend.running_pid is None),
    )
    native = NativeService(
        config=cfg,
        env=env,
        backend=backend,
        queue=queue,
        sessions=sessions,
        audit=audit,
        consent=gate,
        audit_problem=audit_problem,
    )
    native.unfinished_at_start = len(unfinished)
    return native


async def _every_few_seconds(native: NativeService) -> None:
    """What must not wait for the next event to happen: the summary of log lines a flood had
    held back (:func:`deskhand_d.log.summarise_due`), and audit outcomes a full disk refused,
    written once it takes writes again (:meth:`deskhand_d.audit.AuditLog.write_kept`)."""
    while True:
        await trio.sleep(5)
        logsetup.summarise_due()
        if native.audit is not None and native.audit.waiting:
            native.audit.write_kept()


async def _expire_sessions(sessions: SessionManager, native: NativeService) -> None:
    """End sessions whose client has been gone past the grace period; cancel their work."""
    while True:
        await trio.sleep(1)
        for session in sessions.expire(trio.current_time()):
            native.queue.cancel_session(session.session_id)
            log.info("session.expired", session=session.name or session.session_id[:8])


async def serve_daemon(
    cfg: Config,
    env: MutableMapping[str, str],
    *,
    handle_signals: bool = True,
    task_status: trio.TaskStatus[Path] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon until it is asked to stop. ``task_status`` gets the socket path."""
    notifier = activation.Notifier(env)
    _raise_open_files_limit()
    with contextlib.ExitStack() as held:
        # Caught before the socket exists: once a client can connect, a stop signal must
        # end the daemon cleanly (socket unlinked, logs flushed), never by the default kill.
        signals = (
            held.enter_context(
                trio.open_signal_receiver(
                    signal.SIGTERM, signal.SIGINT, pidfile.EMERGENCY_STOP_SIGNAL
                )
            )
            if handle_signals
            else None
        )
        await _serve(cfg, env, notifier, signals, task_status)


async def _serve(
    cfg: Config,
    env: MutableMapping[str, str],
    notifier: activation.Notifier,
    signals: AsyncIterator[int] | None,
    task_status: trio.TaskStatus[Path],
) -> None:
    sock, bound = obtain_listener(cfg, env)
    pid_path = ""
    confirmed = _StopsBySignal()
    hub = Hub()
    services: Services | None = None
    managed_by = ""
    if bound.identity is None:  # inherited: a service manager restarts us, not deskhandctl
        managed_by = "launchd" if sys.platform == "darwin" else "systemd"
    try:
        async with trio.open_nursery() as nursery:
            if signals is not None:  # first: the socket already accepts into its backlog
                await nursery.start(
                    _watch_signals,
                    signals,
                    hub,
                    lambda: services.native if services else None,
                    confirmed,
                )
            async with open_services(
                cfg, env, socket_path=bound.path, hub=hub, managed_by=managed_by
            ) as services:
                if signals is not None:  # SIGUSR1 now finds the native service: clients may send it
                    try:
                        pid_path = pidfile.write(bound.path)
                    except (OSError, ValueError) as exc:
                        log.warning("pidfile.unavailable", error=str(exc))
                    else:
                        confirmed.open(bound.path)
                server = RpcServer(services)
                await nursery.start(server.serve, sock)
                notifier.notify(f"READY=1\nMAINPID={os.getpid()}")
                log.info(
                    "daemon.ready", socket=str(bound.path), pid=os.getpid(), version=__version__
                )
                task_status.started(bound.path)
                await hub.shutdown_requested.wait()
                notifier.notify("STOPPING=1")
                log.info("daemon.stopping", reason=hub.shutdown_reason)
                with trio.move_on_after(cfg.daemon.shutdown_grace_s):
                    await server.close_all("the daemon is stopping")
                nursery.cancel_scope.cancel()
    finally:
        confirmed.close()
        if pid_path:
            pidfile.remove(pid_path)
        unixsock.release(bound)
        log.info("daemon.stopped")
        logsetup.flush()

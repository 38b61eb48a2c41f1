"""``deskhand-d`` / ``python -m deskhand_d``: parse arguments, load config, run the daemon.

Exit codes: 0 after a graceful stop; 2 bad arguments; 69 the socket cannot be used (unsafe
directory, path too long); 75 another daemon already serves this socket (connect to it);
78 bad configuration (also: our LaunchAgent started it without handing over its socket).
"""

from __future__ import annotations

import argparse
import os
import sys

from deskhand_d import __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deskhand-d",
        description="Deskhand daemon: owns this desktop's computer-use connection.",
    )
    p.add_argument("--version", action="version", version=f"deskhand-d {__version__}")
    p.add_argument("--socket", help="listen on this Unix socket path (env DESKHAND_SOCKET)")
    p.add_argument("--config", help="read this config file (env DESKHAND_CONFIG)")
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="log verbosity (env DESKHAND_LOG_LEVEL)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Heavy imports only after --help/--version had their chance to exit quickly.
    import trio

    from deskhand_d import app, config, log
    from deskhand_d.errors import EX_CONFIG, ConfigError, StartupError

    env = os.environ
    if args.config:
        env["DESKHAND_CONFIG"] = args.config
    cli: dict[str, tuple[str, str, object]] = {}
    if args.socket:
        cli["--socket"] = ("daemon", "socket", args.socket)
    if args.log_level:
        cli["--log-level"] = ("daemon", "log_level", args.log_level)
    try:
        cfg = config.load(env, cli)
    except ConfigError as exc:
        print(f"deskhand-d: configuration error: {exc.message}", file=sys.stderr)
        return EX_CONFIG
    log.configure(level=cfg.daemon.log_level, secrets=cfg.secret_values(env))
    try:
        trio.run(app.serve_daemon, cfg, env)
    except StartupError as exc:
        print(f"deskhand-d: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

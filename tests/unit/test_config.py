"""Configuration: TOML plus environment overrides, strict keys, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deskhand_d import config
from deskhand_d.errors import ConfigError


def test_defaults_without_file() -> None:
    """An empty config gives documented defaults and the platform socket path."""
    cfg = config.parse("", source="c.toml", env={"XDG_RUNTIME_DIR": "/run/user/7"})
    assert cfg.daemon.max_message_bytes == 64 * 1024 * 1024
    assert cfg.socket_path({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path(
        "/run/user/7/deskhand/deskhand.sock"
    )


def test_unknown_key_is_named() -> None:
    """A misspelt key is an error naming the full key, not a silently ignored setting."""
    with pytest.raises(ConfigError) as info:
        config.parse("[daemon]\nmax_mesage_bytes = 5\n", source="c.toml", env={})
    assert "daemon.max_mesage_bytes" in info.value.message
    assert "c.toml" in info.value.message


def test_unknown_section_is_named() -> None:
    """An unknown top-level table is refused by name."""
    with pytest.raises(ConfigError, match="`jev2`"):
        config.parse("[jev2]\nx = 1\n", source="c.toml", env={})


def test_wrong_type_names_key() -> None:
    """A value of the wrong type names the key and the expected type."""
    with pytest.raises(ConfigError) as info:
        config.parse('[daemon]\nmax_outstanding_requests = "many"\n', source="c.toml", env={})
    assert "daemon.max_outstanding_requests" in info.value.message
    assert "int" in info.value.message


def test_out_of_range_is_refused() -> None:
    """Limits are range-checked."""
    with pytest.raises(ConfigError, match="max_message_bytes"):
        config.parse("[daemon]\nmax_message_bytes = 10\n", source="c.toml", env={})


def test_env_overrides_file_and_cli_overrides_env() -> None:
    """Precedence is file < environment < command line."""
    text = '[daemon]\nsocket = "/from/file"\nlog_level = "debug"\n'
    env = {"DESKHAND_SOCKET": "/from/env", "DESKHAND_MAX_OUTSTANDING_REQUESTS": "3"}
    cfg = config.parse(text, source="c.toml", env=env)
    assert cfg.daemon.socket == "/from/env"
    assert cfg.daemon.max_outstanding_requests == 3
    assert cfg.daemon.log_level == "debug"
    cfg = config.parse(
        text, source="c.toml", env=env, cli={"--socket": ("daemon", "socket", "/cli")}
    )
    assert cfg.daemon.socket == "/cli"


def test_bad_env_value_names_variable() -> None:
    """A bad environment value names the variable it came from."""
    with pytest.raises(ConfigError, match="DESKHAND_LOG_LEVEL"):
        config.parse("", source="c.toml", env={"DESKHAND_LOG_LEVEL": "loud"})


def test_invalid_toml() -> None:
    """Broken TOML is reported with the file name."""
    with pytest.raises(ConfigError, match=r"c\.toml: not valid TOML"):
        config.parse("[daemon\n", source="c.toml", env={})


def test_secret_values_come_from_env() -> None:
    """Only configured secret variables that are set contribute values to redact."""
    cfg = config.parse("", source="c.toml", env={})
    assert cfg.secret_values({"TYPESAFE_API_KEY": "sk-123456", "OTHER": "x"}) == ["sk-123456"]


def test_daemon_exits_78_on_bad_config(tmp_path: Path) -> None:
    """The daemon process refuses a bad config file with exit code 78 and names the key."""
    conf = tmp_path / "config.toml"
    conf.write_text("[daemon]\nbogus = 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "deskhand_d", "--config", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 78
    assert "daemon.bogus" in proc.stderr

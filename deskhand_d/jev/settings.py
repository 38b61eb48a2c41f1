"""Where Jev is and which key to use: the endpoint rule and the owner-only env file.

The endpoint must be https, except plain http on a loopback address (tests, local proxies);
credentials in the URL are refused so they can never reach a message. The key comes from
``TYPESAFE_API_KEY``, else from an owner-only env file; errors name the path and the fix, never
the file's contents.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from deskhand_d.errors import ConfigError, DeskhandError
from deskhand_d.jev.wire import DEFAULT_URL
from deskhand_d.privatefile import PrivateFile

URL_ENV = "DESKHAND_JEV_URL"
KEY_ENV = "TYPESAFE_API_KEY"
ENV_FILE_VARS = ("DESKHAND_ENV_FILE", "JEV_CUA_ENV_FILE")
MAX_ENV_FILE_BYTES = 16 * 1024


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, source: str = URL_ENV) -> str:
    """``url`` if it is a safe endpoint, else ValueError (which never quotes the whole URL)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        raise ValueError(f"{source} is not a valid URL") from None
    scheme = parts.scheme.lower()
    if not host:
        raise ValueError(f"{source} has no host; expected e.g. {DEFAULT_URL}")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"{source} must not contain a user name or password; the API key is sent in the "
            f"Authorization header (set {KEY_ENV})"
        )
    if scheme == "https":
        return url.strip()
    if scheme == "http" and is_loopback(host):
        return url.strip()
    if scheme == "http":
        raise ValueError(
            f"{source} uses plain http for host {host!r}; use https, or a loopback host "
            "(127.0.0.1, ::1, localhost) for a local test server"
        )
    raise ValueError(f"{source} must be an https URL (got scheme {scheme or 'none'!r})")


def resolve_url(env: Mapping[str, str]) -> str:
    """The decision endpoint: ``DESKHAND_JEV_URL`` if set, else the public API.

    https is required; plain http only for a loopback host. Anything else raises ValueError.
    """
    return check_url(env.get(URL_ENV, "").strip() or DEFAULT_URL)


def check_key(key: str, source: str) -> str:
    if "\r" in key or "\n" in key or "\x00" in key:
        raise ValueError(f"the API key from {source} contains a line break or NUL; fix it")
    return key


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    for i, ch in enumerate(value):  # an unquoted value ends at a " #" comment
        if ch == "#" and i > 0 and value[i - 1] in " \t":
            return value[:i].rstrip()
    return value


def _parse_dotenv(text: str, path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"{path}: line {number} is not of the form NAME=value; fix that line")
        out[name] = _unquote(value)
    return out


def load_key(env: Mapping[str, str], env_file: str | None = None) -> str | None:
    """The TypeSafe API key, or None if none is configured.

    ``TYPESAFE_API_KEY`` in ``env`` wins. Otherwise the key is read from a dotenv file: the one
    named by ``DESKHAND_ENV_FILE`` (or its alias ``JEV_CUA_ENV_FILE``), which must exist, else
    ``env_file`` (the default location, which may be missing). The file must be a plain file
    (not a symbolic link) owned by this user with no group or other permissions; otherwise
    ValueError names the path and the fix, never the file's contents.
    """
    key = env.get(KEY_ENV, "").strip()
    if key:
        return check_key(key, KEY_ENV)
    named = next(((var, env[var]) for var in ENV_FILE_VARS if env.get(var, "").strip()), None)
    if named is not None:
        source, path = named[0], named[1].strip()
    elif env_file:
        source, path = "", env_file
    else:
        return None

    def refuse(reason: str, message: str) -> DeskhandError:
        return ConfigError(message, data={"reason": reason})

    try:
        data = PrivateFile(
            path, max_bytes=MAX_ENV_FILE_BYTES, lock_wait_s=0.0, error=refuse
        ).read_bytes()
    except ConfigError as exc:
        raise ValueError(f"cannot use the env file: {exc.message}") from None
    if data is None:
        if source:
            raise ValueError(f"{path} (named by {source}) does not exist; create it or unset it")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    key = _parse_dotenv(text, path).get(KEY_ENV, "").strip()
    return check_key(key, path) if key else None


# -- the client -------------------------------------------------------------------------------

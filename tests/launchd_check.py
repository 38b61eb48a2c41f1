"""A small type checker for launchd job plists, for CI machines without ``plutil``.

``plistlib`` accepts any well-formed plist and the DTD only checks structure, so neither
notices ``<integer>`` where launchd wants a string, ``"0600"`` for a mode, or a misspelt key
(launchd ignores unknown keys silently). :func:`problems` checks the keys Deskhand uses, and
the common ones around them, against the types in launchd.plist(5).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(_str(x) for x in v)


def _str_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _bool_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(_bool(x) for x in v.values())


def _keep_alive(v: Any) -> bool:
    if _bool(v):
        return True
    allowed: dict[str, Check] = {
        "SuccessfulExit": _bool,
        "Crashed": _bool,
        "NetworkState": _bool,
        "PathState": _bool_dict,
        "OtherJobEnabled": _bool_dict,
        "AfterInitialDemand": lambda x: _bool(x) or _bool_dict(x),
    }
    return isinstance(v, dict) and all(k in allowed and allowed[k](x) for k, x in v.items())


TOP_LEVEL: dict[str, Check] = {
    "Label": _str,
    "Program": _str,
    "ProgramArguments": _str_list,
    "RunAtLoad": _bool,
    "KeepAlive": _keep_alive,
    "Disabled": _bool,
    "EnvironmentVariables": _str_dict,
    "StandardInPath": _str,
    "StandardOutPath": _str,
    "StandardErrorPath": _str,
    "WorkingDirectory": _str,
    "RootDirectory": _str,
    "UserName": _str,
    "GroupName": _str,
    "Umask": lambda v: _int(v) and 0 <= v <= 0o777,
    "ProcessType": lambda v: v in {"Background", "Standard", "Adaptive", "Interactive"},
    "LimitLoadToSessionType": lambda v: _str(v) or _str_list(v),
    "ThrottleInterval": _int,
    "ExitTimeOut": _int,
    "StartInterval": _int,
    "Nice": _int,
    "AbandonProcessGroup": _bool,
    "EnableTransactions": _bool,
    "AssociatedBundleIdentifiers": lambda v: _str(v) or _str_list(v),
    "Sockets": lambda v: isinstance(v, dict),  # entries checked by _socket_problems
}

SOCKET_KEYS: dict[str, Check] = {
    "SockType": lambda v: v in {"stream", "dgram", "seqpacket"},
    "SockPassive": _bool,
    "SockNodeName": _str,
    "SockServiceName": lambda v: _str(v) or _int(v),
    "SockFamily": lambda v: v in {"IPv4", "IPv6", "IPv4v6", "Unix"},
    "SockProtocol": _str,
    "SockPathName": _str,
    "SecureSocketWithKey": _str,
    "SockPathMode": lambda v: _int(v) and 0 <= v <= 0o777,
    "SockPathOwner": _int,
    "SockPathGroup": _int,
    "Bonjour": lambda v: _bool(v) or _str(v) or _str_list(v),
    "MulticastGroup": _str,
}

PATH_KEYS = ("Program", "StandardInPath", "StandardOutPath", "StandardErrorPath",
             "WorkingDirectory", "RootDirectory")  # fmt: skip
_PLACEHOLDER = re.compile(r"@[A-Z_]+@")


def _socket_problems(name: str, entry: Any, rendered: bool) -> list[str]:
    entries = entry if isinstance(entry, list) else [entry]
    out: list[str] = []
    for sock in entries:
        if not isinstance(sock, dict):
            out.append(f"Sockets.{name}: expected a dict, got {type(sock).__name__}")
            continue
        for key, value in sock.items():
            check = SOCKET_KEYS.get(key)
            if check is None:
                out.append(f"Sockets.{name}: unknown key {key!r}")
            elif not check(value):
                out.append(f"Sockets.{name}.{key}: bad value {value!r}")
        if "SockPathName" in sock and "SecureSocketWithKey" in sock:
            out.append(f"Sockets.{name}: SockPathName and SecureSocketWithKey exclude each other")
        path = sock.get("SockPathName")
        if rendered and isinstance(path, str) and not PurePosixPath(path).is_absolute():
            out.append(f"Sockets.{name}.SockPathName: not absolute: {path!r}")
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def problems(job: Any, *, rendered: bool = True) -> list[str]:
    """Everything wrong with a parsed launchd job plist; empty when it looks right.

    Args:
        job: the value ``plistlib.loads`` returned.
        rendered: also require absolute paths and no ``@PLACEHOLDER@`` left, as in a file
            that is about to be installed (False for the checked-in template).
    """
    if not isinstance(job, dict):
        return [f"top level: expected a dict, got {type(job).__name__}"]
    out: list[str] = []
    for key, value in job.items():
        check = TOP_LEVEL.get(key)
        if check is None:
            out.append(f"unknown key {key!r}")
        elif not check(value):
            out.append(f"{key}: bad value {value!r}")
    if "Label" not in job:
        out.append("Label is missing")
    if "Program" not in job and "ProgramArguments" not in job:
        out.append("neither Program nor ProgramArguments is set")
    sockets = job.get("Sockets")
    if isinstance(sockets, dict):
        for name, entry in sockets.items():
            out.extend(_socket_problems(name, entry, rendered))
    if rendered:
        args = job.get("ProgramArguments")
        exe = job.get("Program") or (args[0] if isinstance(args, list) and args else None)
        if isinstance(exe, str) and not PurePosixPath(exe).is_absolute():
            out.append(f"executable is not an absolute path: {exe!r}")
        for key in PATH_KEYS:
            value = job.get(key)
            if isinstance(value, str) and not PurePosixPath(value).is_absolute():
                out.append(f"{key}: not absolute: {value!r}")
        left = sorted({m for s in _strings(job) for m in _PLACEHOLDER.findall(s)})
        if left:
            out.append(f"placeholders left: {', '.join(left)}")
    return out

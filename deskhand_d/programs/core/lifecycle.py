"""The MCP methods the core answers itself, the way Sky's Swift SDK does. Pure.

What this owns: ``initialize`` (echo a supported ``protocolVersion``, else the latest; only the
``tools`` capability; ``serverInfo`` with Sky's name; a second ``initialize`` refused),
``ping``, ``tools/list`` (the backend's list) and "method not found" for everything else.
Requests before ``initialize`` are served anyway, as the SDK does by default.
"""

from __future__ import annotations

from collections.abc import Callable

from . import texts
from .jsonrpc import JsonObj, error, result


class Lifecycle:
    def __init__(self, server_version: str, tool_list: Callable[[], list[JsonObj]]) -> None:
        self._server_version = server_version
        self._tool_list = tool_list
        self.initialized = False

    def answer(self, rid: object, method: str, params: JsonObj) -> JsonObj:
        """The response to a request that is not a ``tools/call``."""
        if method == "initialize":
            if self.initialized:
                return error(rid, texts.ALREADY_INITIALIZED)
            wanted = params.get("protocolVersion")
            if not isinstance(wanted, str):
                return error(rid, texts.INVALID_PARAMS, detail="protocolVersion must be a string")
            version = (
                wanted
                if wanted in texts.SUPPORTED_PROTOCOL_VERSIONS
                else texts.LATEST_PROTOCOL_VERSION
            )
            self.initialized = True
            return result(
                rid,
                {
                    "capabilities": {"tools": {"listChanged": False}},
                    "protocolVersion": version,
                    "serverInfo": {"name": texts.SERVER_NAME, "version": self._server_version},
                },
            )
        if method == "ping":
            return result(rid, {})
        if method == "tools/list":
            return result(rid, {"tools": self._tool_list()})
        return error(rid, texts.METHOD_NOT_FOUND, method=method)

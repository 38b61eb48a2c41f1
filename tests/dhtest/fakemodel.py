"""A scripted fake model server for driving real agent hosts (issue 27). Stdlib only.

One real HTTP server on 127.0.0.1 (random port, in a thread) speaks both wires a host may use:

- the Anthropic Messages API as Claude Code uses it (``ANTHROPIC_BASE_URL=server.url``):
  ``POST /v1/messages`` (streamed as SSE when ``"stream": true``, plain JSON otherwise),
  ``POST /v1/messages/count_tokens``, and ``GET /v1/models``;
- the OpenAI Responses API as Codex uses it with a custom provider
  (``base_url = server.url + "/v1"``, ``wire_api = "responses"``): ``POST /v1/responses``
  streamed as SSE, and ``GET /v1/models``.

The script is a list of turns. A turn is a ``Call`` (or a list of them, made together), a final
``str`` text, or a callable that receives the parsed ``Request`` (the one being answered, whose
tool results the turn may read) and returns one of those. A request takes the next turn only when
it is the host's main conversation: it offers tools and one of them is the script's tool (hosts
prefix MCP tools: ``mcp__<server>__<tool>`` and so on; ``Call.tool`` is the MCP tool's own name and
the fake finds the host's name for it in the request's ``tools``). Other requests (titles, quota
probes, summaries) get a short text answer and take no turn. When the script is spent, every
further main request gets ``FakeModel.done_text``.

What the two hosts need (measured with Claude Code 2.1.332 and Codex 0.171.0):
- Claude Code defers MCP tools behind its ``ToolSearch`` tool (listed by name in the system
  text, not in ``tools``) unless ENABLE_TOOL_SEARCH=false; the fake then first calls
  ``ToolSearch`` with ``select:<names>`` (a main request that takes no turn).
- Codex offers MCP tools as ``{"type": "namespace", "name": "mcp__<server>", "tools": [...]}``;
  the fake calls them as ``{"type": "function_call", "namespace": "mcp__<server>", "name":
  "<tool>"}``. With a model whose metadata says ``tool_mode = code_mode_only`` (all the bundled
  OpenAI models) Codex offers no function per MCP tool, only a JavaScript ``exec`` tool (in an
  ``additional_tools`` input item): script ``Code`` turns for that.

Every request is recorded (``server.requests``: method, path, headers, parsed JSON body) so a test
can assert on exactly what the host sent its model; ``tool_results()`` pulls the tool results out
of either wire.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """The model calls MCP tool ``tool`` (its own name, without the host's prefix)."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Code:
    """Codex's code mode (models whose tool_mode is code_mode_only): the model calls the host's
    freeform ``exec`` tool with JavaScript that calls ``tools.mcp__<server>__<tool>(...)`` and
    outputs with ``text(...)`` / ``image(...)``. Responses wire only."""

    source: str
    tool: str = "exec"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    wire: str  # "anthropic", "responses", or "other"
    main: bool = False  # took a turn of the script
    turn: int | None = None

    def tool_names(self) -> list[str]:
        if not isinstance(self.body, dict):
            return []
        tools = list(self.body.get("tools") or [])
        for it in self.body.get("input") or []:  # Codex's code mode lists its tools in the input
            if isinstance(it, dict) and it.get("type") == "additional_tools":
                tools += it.get("tools") or []
        return list(_tool_names(tools))


Turn = Call | list[Call] | Code | str
Step = Turn | Callable[[Request], Turn]


def _tool_names(tools: list[Any]) -> Iterator[str]:
    """The names a model sees: a tool in a namespace (Codex: ``{"type": "namespace", "name":
    "mcp__<server>", "tools": [...]}``) as ``<namespace>__<tool>``."""
    for ns, name in _tool_index(tools):
        yield _qualified(ns, name)


def _unqualified(name: str) -> str:
    """``functions__exec`` (Codex's default namespace) -> ``exec``."""
    return name.removeprefix("functions__")


def _qualified(ns: str | None, name: str) -> str:
    if not ns:
        return name
    return f"{ns}{name}" if ns.endswith(("_", ".", "/")) else f"{ns}__{name}"


def _tool_index(tools: list[Any]) -> Iterator[tuple[str | None, str]]:
    for t in tools:
        if not isinstance(t, dict):
            continue
        if isinstance(t.get("tools"), list):  # a namespace of tools
            for inner_ns, inner in _tool_index(t["tools"]):
                yield (inner_ns or t.get("name") or None), inner
            continue
        name = t.get("name") or (t.get("function") or {}).get("name")
        if isinstance(name, str):
            yield None, name


def host_tool_name(names: list[str], tool: str) -> str | None:
    """The host's name for MCP tool ``tool`` among ``names``, or None."""
    names = list(dict.fromkeys(names))
    if tool in names:
        return tool
    for sep in ("__", ".", "/", "-", "_"):
        found = [n for n in names if n.endswith(sep + tool)]
        if len(found) == 1:
            return found[0]
    return None


def tool_results(req: Request) -> list[dict[str, Any]]:
    """The tool results in a request, newest last, each ``{"id", "content", "is_error"}``.

    Anthropic: the ``tool_result`` blocks of the user messages (content as sent: a string or a
    list of blocks). Responses: the ``function_call_output`` items (``output`` as sent: a string or
    a list of content items); ``is_error`` is None there (the wire has no such flag).
    """
    body = req.body if isinstance(req.body, dict) else {}
    out: list[dict[str, Any]] = []
    if req.wire == "anthropic":
        for m in body.get("messages") or []:
            if m.get("role") != "user" or not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out.append(
                        {
                            "id": b.get("tool_use_id"),
                            "content": b.get("content"),
                            "is_error": b.get("is_error"),
                        }
                    )
    elif req.wire == "responses":
        for it in body.get("input") or []:
            if isinstance(it, dict) and it.get("type") in (
                "function_call_output",
                "custom_tool_call_output",
                "mcp_tool_call_output",
            ):
                out.append({"id": it.get("call_id"), "content": it.get("output"), "is_error": None})
    return out


class FakeModel:
    """The server. Use as a context manager, or ``start()`` / ``stop()``."""

    done_text = "Done."
    side_text = "Probe"

    def __init__(
        self,
        script: list[Step],
        *,
        model: str = "fake-model",
        models_answer: dict[str, Any] | None = None,
        main_tool: str | None = None,
        tools: tuple[str, ...] = (),
    ) -> None:
        self.script = list(script)
        self.main_tool = main_tool
        # The tools the script's callables may call (they cannot be read off a callable): loaded
        # through Claude Code's ToolSearch with those the script names directly.
        self.tools = tools
        self.model = model
        self.models_answer = models_answer
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._turn = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModel:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                fake._handle(self, "GET")

            def do_POST(self) -> None:
                fake._handle(self, "POST")

            def do_HEAD(self) -> None:
                fake._handle(self, "HEAD")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="fakemodel"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what was received -----------------------------------------------------------------
    def main_requests(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    def last_tool_results(self) -> list[dict[str, Any]]:
        mains = self.main_requests()
        return tool_results(mains[-1]) if mains else []

    # --- serving ---------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        text = raw.decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        path = h.path.split("?", 1)[0]
        wire = (
            "anthropic"
            if path.startswith("/v1/messages")
            else "responses"
            if path.endswith("/responses")
            else "other"
        )
        req = Request(method, h.path, {k.lower(): v for k, v in h.headers.items()}, body, wire)
        with self._lock:
            self.requests.append(req)
        try:
            if method == "POST" and path == "/v1/messages/count_tokens":
                self._json(h, 200, {"input_tokens": max(1, len(text) // 4)})
            elif method == "POST" and path == "/v1/messages":
                self._anthropic(h, req)
            elif method == "POST" and wire == "responses":
                self._responses(h, req)
            elif method == "GET" and path.endswith("/models"):
                self._json(
                    h,
                    200,
                    self.models_answer
                    or {
                        "object": "list",
                        "data": [
                            {
                                "id": self.model,
                                "object": "model",
                                "type": "model",
                                "display_name": self.model,
                                "created_at": "2026-01-01T00:00:00Z",
                                "created": 1767225600,
                                "owned_by": "fake",
                            }
                        ],
                        "has_more": False,
                        "first_id": self.model,
                        "last_id": self.model,
                    },
                )
            else:
                self._json(
                    h,
                    404,
                    {
                        "type": "error",
                        "error": {
                            "type": "not_found_error",
                            "message": f"fake model: no {method} {path}",
                        },
                    },
                )
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # a bug in a script must show in the test, not hang the host
            self.errors.append(f"{type(e).__name__}: {e}")
            raise

    def _next_turn(self, req: Request, names: list[str]) -> tuple[list[tuple[str, Any]], str]:
        """Decide: ([(host tool name, arguments)], text). Marks req main when it takes a turn."""
        wanted = self.main_tool or _first_tool(self.script)
        deferred = _deferred_names(req) if "ToolSearch" in names else []
        is_main = bool(names) and (
            wanted is None or host_tool_name(names + deferred, wanted) is not None
        )
        if not is_main:
            return [], self.side_text
        # Claude Code defers MCP tools behind ToolSearch: load every one the script names.
        missing = [
            m
            for m in (
                host_tool_name(deferred, t)
                for t in dict.fromkeys([*_script_tools(self.script), *self.tools])
                if host_tool_name(names, t) is None
            )
            if m
        ]
        if missing:
            req.main = True
            return [
                (
                    "ToolSearch",
                    {"query": "select:" + ",".join(missing), "max_results": len(missing)},
                )
            ], ""
        with self._lock:
            req.main = True
            if self._turn >= len(self.script):
                return [], self.done_text
            req.turn = self._turn
            probe: Any = self.script[self._turn]
            self._turn += 1
        if callable(probe) and not isinstance(probe, Call):
            probe = probe(req)
        if isinstance(probe, str):
            return [], probe
        if isinstance(probe, Code):
            return [(probe.tool, probe)], ""
        calls = [probe] if isinstance(probe, Call) else list(probe)
        out: list[tuple[str, Any]] = []
        for c in calls:
            name = host_tool_name(names, c.tool)
            if name is None:
                self.errors.append(f"turn {req.turn}: no tool {c.tool!r} in {names}")
                return [], f"(fake model: no tool {c.tool!r} offered)"
            out.append((name, c.arguments))
        return out, ""

    def _json(self, h: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _sse(self, h: BaseHTTPRequestHandler, events: list[tuple[str, dict[str, Any]]]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        h.end_headers()
        for name, data in events:
            h.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        h.wfile.flush()
        h.close_connection = True

    # Anthropic Messages
    def _anthropic(self, h: BaseHTTPRequestHandler, req: Request) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        calls, text = self._next_turn(req, req.tool_names())
        mid = f"msg_fake{next(self._ids)}"
        model = body.get("model") or self.model
        blocks: list[dict[str, Any]] = []
        if text or not calls:
            blocks.append({"type": "text", "text": text})
        for name, args in calls:
            if isinstance(args, Code):
                self.errors.append("Code turns are for Codex (the Responses wire) only")
                continue
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{next(self._ids)}",
                    "name": name,
                    "input": args,
                }
            )
        stop = "tool_use" if calls else "end_turn"
        usage = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if not body.get("stream"):
            self._json(
                h,
                200,
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        ev: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            )
        ]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                ev.append(
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                )
                ev.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": b["text"]},
                        },
                    )
                )
            else:
                ev.append(
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {**b, "input": {}},
                        },
                    )
                )
                ev.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {
                                "type": "input_json_delta",
                                "partial_json": json.dumps(b["input"]),
                            },
                        },
                    )
                )
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        ev.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        ev.append(("message_stop", {"type": "message_stop"}))
        self._sse(h, ev)

    # OpenAI Responses
    def _responses(self, h: BaseHTTPRequestHandler, req: Request) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        calls, text = self._next_turn(req, req.tool_names())
        rid = f"resp_fake{next(self._ids)}"
        model = body.get("model") or self.model
        items: list[dict[str, Any]] = []
        if text or not calls:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_fake{next(self._ids)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        spaces = {_qualified(ns, n): ns for ns, n in _tool_index(body.get("tools") or [])}
        for name, args in calls:
            n = next(self._ids)
            if isinstance(args, Code):
                items.append(
                    {
                        "type": "custom_tool_call",
                        "id": f"ctc_fake{n}",
                        "call_id": f"call_fake{n}",
                        "name": _unqualified(name),
                        "input": args.source,
                        "status": "completed",
                    }
                )
                continue
            call: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_fake{n}",
                "call_id": f"call_fake{n}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            ns = spaces.get(name)
            if ns:  # a namespaced tool is called by its own name within its namespace
                call["name"], call["namespace"] = name[len(_qualified(ns, "")) :], ns
            items.append(call)
        base = {"id": rid, "object": "response", "created_at": 1767225600, "model": model}
        ev: list[tuple[str, dict[str, Any]]] = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {**base, "status": "in_progress", "output": []},
                },
            )
        ]
        for i, it in enumerate(items):
            ev.append(
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": i, "item": it},
                )
            )
            if it["type"] == "message":
                ev.append(
                    (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "output_index": i,
                            "content_index": 0,
                            "item_id": it["id"],
                            "delta": text,
                        },
                    )
                )
            ev.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": i, "item": it},
                )
            )
        ev.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        **base,
                        "status": "completed",
                        "output": items,
                        "usage": {
                            "input_tokens": 10,
                            "input_tokens_details": {"cached_tokens": 0},
                            "output_tokens": 5,
                            "output_tokens_details": {"reasoning_tokens": 0},
                            "total_tokens": 15,
                        },
                    },
                },
            )
        )
        self._sse(h, ev)


def _deferred_names(req: Request) -> list[str]:
    """MCP tool names a Claude Code request lists as deferred (loadable with ToolSearch)."""
    text = (
        json.dumps(req.body.get("system")) + json.dumps(req.body.get("messages"))
        if isinstance(req.body, dict)
        else ""
    )
    return sorted(set(re.findall(r"mcp__[A-Za-z0-9_.-]+?__[A-Za-z0-9_-]+", text)))


def _script_tools(script: list[Step]) -> list[str]:
    """The tools the script names directly, in order, once each."""
    out: list[str] = []
    for step in script:
        for c in [step] if isinstance(step, Call) else step if isinstance(step, list) else []:
            if c.tool not in out:
                out.append(c.tool)
    return out


def _first_tool(script: list[Step]) -> str | None:
    """The first tool the script names directly (how main requests are told from side ones)."""
    for step in script:
        if isinstance(step, Call):
            return step.tool
        if isinstance(step, list) and step:
            return step[0].tool
    return None

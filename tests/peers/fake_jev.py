"""A scripted stand-in for the System One decision API: real HTTP/1.1 on loopback (trio + h11).

In-process::

    record: list[dict] = []
    port = await nursery.start(serve_fake_jev, script, record)  # or record=record

As a process (runs until killed; the port file appears once the socket listens)::

    python tests/peers/fake_jev.py --port-file PATH --script SCRIPT.json [--record OUT.jsonl]

Only ``POST /v1/systemone`` follows the script; any other method or path gets
``404 {"detail": "Not Found"}`` and consumes nothing.

Script format: a JSON list of objects.

* Header entries configure the server and are not answers. ``{"expect_key": "K"}``: requests
  must carry ``Authorization: Bearer K``; any other (or no) Authorization gets
  ``401 {"detail": {"error_type": "authentication_error", ...}}`` without consuming an entry.
  ``{"default": ENTRY}``: the answer once the scripted entries are used up.
* Answer entries are used one per request, in order. When they run out the ``default`` entry
  answers, else the last answer entry repeats; with no answer entries at all every request
  gets well-formed answers that pick the first option of each choice question.

An answer entry is one of (``delay_s``, ``stall_body_s`` and ``headers`` combine with any):

==============================================  ==============================================
``{"answers": {...}}``                          200 ``{"model", "answers", "usage"}``
``{"pick": {"target": "i11", "action": ...,``   200 with answers built in the real API's shape
                                                (``"target_match": "ID: One"`` instead of
                                                ``target`` picks the first candidate whose
                                                description contains that text)
``"confidence": 0.9, "done": 0.0,``             from the request's questions: a choice gets
``"risk": 0.0}}``                               ``choice``, ``confidence``, ``probabilities``
                                                (over every option, 2 decimals); a noul gets
                                                ``noul``. Missing picks: first option, 0.0.
``{"status": 429, "retry_after": "1"}``         429 with a ``Retry-After`` header
``{"status": 500}`` / ``529`` / ``401`` ...     that status with a JSON ``detail`` body
``{"raw": "not json"}``                         200 (or ``status``) with this exact text
``{"body": {...}}``                             200 (or ``status``) with this JSON
``{"redirect": "https://elsewhere/"}``          302 (or ``status``) with ``Location``
``{"delay_s": 30}``                             sleep first (cancellable); alone, then answers
                                                like an empty pick
``{"stall_body_s": 30, ...}``                   send the status line, headers and half the body,
                                                then stall before the rest
==============================================  ==============================================

Every request is recorded, before any delay, as ``{"method", "path", "headers" (lower-cased
names, Authorization left out), "auth_ok" (bool against ``expect_key``; None when no key is
expected), "body" (parsed JSON, or None), "entry" (index of the answer entry used, or None),
"status", "at" (trio clock seconds)}`` — appended to the ``record`` list and, for the process
form, written as one JSON line to ``--record``.

Error bodies deliberately contain a secret-looking marker (:data:`BODY_MARKER`) so tests can
prove that clients never echo response bodies.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import h11
import trio

PATH = "/v1/systemone"
RESOLVED_MODEL = "jev-1.13.0"
BODY_MARKER = "sk-fake-body-marker-7f3a"
MAX_REQUEST_BYTES = 4 << 20


def _pick_answers(request: Any, pick: dict[str, Any]) -> dict[str, Any]:
    """Answers for every question of ``request`` in the API's shape, following ``pick``."""
    questions = request.get("questions") if isinstance(request, dict) else None
    if not isinstance(questions, dict) or not questions:
        questions = {
            "target": {"type": "choice", "criteria": {pick.get("target", "i0"): ""}},
            "action": {"type": "choice", "criteria": {pick.get("action", "click_element"): ""}},
            "done": {"type": "noul"},
            "risk": {"type": "noul"},
        }
    answers: dict[str, Any] = {}
    for qid, question in questions.items():
        qtype = question.get("type") if isinstance(question, dict) else None
        if qtype == "choice":
            criteria = question.get("criteria") or {}
            options = list(criteria)
            chosen = pick.get(qid, options[0] if options else "")
            match = pick.get(f"{qid}_match")
            if isinstance(match, str):  # the first option whose description contains it
                found = [k for k, v in criteria.items() if isinstance(v, str) and match in v]
                chosen = found[0] if found else "i999999"
            if chosen not in options:
                options.append(chosen)
            k = len(options)
            wanted = pick.get("confidence", 1.0) if qid == "target" else 1.0
            if isinstance(wanted, int | float) and math.isfinite(wanted) and k > 1:
                top = min(max(float(wanted), 0.0), 1.0) * (1 - 1 / k) + 1 / k
            else:
                top = 1.0
            rest = (1.0 - top) / (k - 1) if k > 1 else 0.0
            probs = {key: round(top if key == chosen else rest, 2) for key in options}
            answers[qid] = {
                "type": "choice",
                "choice": chosen,
                "confidence": wanted,
                "probabilities": probs,
            }
        elif qtype == "score":
            levels = question.get("criteria") or ["", ""]
            answers[qid] = {
                "type": "score",
                "score": 0.0,
                "confidence": 1.0,
                "legend": {str(i): str(level) for i, level in enumerate(levels)},
                "probabilities": {str(i): 1.0 if i == 0 else 0.0 for i in range(len(levels))},
            }
        else:
            answers[qid] = {"type": "noul", "noul": pick.get(qid, 0.0)}
    return answers


def _detail(status: int) -> dict[str, Any]:
    kinds = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
    kind = kinds.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"detail": {"error_type": kind, "message": f"scripted {status}", "echo": BODY_MARKER}}


class FakeJev:
    """The script's state: header options, answer entries and the request log."""

    def __init__(
        self,
        script: list[dict[str, Any]],
        record: list[dict[str, Any]] | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.expect_key: str | None = None
        self.default: dict[str, Any] | None = None
        self.entries: list[dict[str, Any]] = []
        for item in script:
            if "expect_key" in item:
                self.expect_key = str(item["expect_key"])
            elif "default" in item:
                self.default = dict(item["default"])
            else:
                self.entries.append(dict(item))
        self.record = record if record is not None else []
        self.on_record = on_record
        self.used = 0

    def next_entry(self) -> tuple[int | None, dict[str, Any]]:
        n = self.used
        self.used += 1
        if n < len(self.entries):
            return n, self.entries[n]
        if self.default is not None:
            return None, self.default
        if self.entries:
            return len(self.entries) - 1, self.entries[-1]
        return None, {"pick": {}}

    def respond(
        self, entry: dict[str, Any], request: Any
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        headers = [(str(k), str(v)) for k, v in (entry.get("headers") or {}).items()]
        if "redirect" in entry:
            headers.append(("Location", str(entry["redirect"])))
            return int(entry.get("status", 302)), headers, b""
        if "raw" in entry:
            return int(entry.get("status", 200)), headers, str(entry["raw"]).encode("utf-8")
        if "body" in entry:
            return int(entry.get("status", 200)), headers, json.dumps(entry["body"]).encode()
        if "answers" in entry or "pick" in entry or "status" not in entry:
            if "answers" in entry:
                answers = entry["answers"]
            else:
                answers = _pick_answers(request, dict(entry.get("pick") or {}))
            body = {
                "model": RESOLVED_MODEL,
                "answers": answers,
                "usage": {"input_tokens": 900, "output_tokens": 60},
            }
            return int(entry.get("status", 200)), headers, json.dumps(body).encode()
        status = int(entry["status"])
        if "retry_after" in entry:
            headers.append(("Retry-After", str(entry["retry_after"])))
        return status, headers, json.dumps(_detail(status)).encode()


async def _next_event(conn: h11.Connection, stream: trio.SocketStream) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await stream.receive_some(65536)
        conn.receive_data(data)  # b"" marks the end of the peer's data


async def _send(
    conn: h11.Connection,
    stream: trio.SocketStream,
    status: int,
    headers: list[tuple[str, str]],
    body: bytes,
    stall_s: float = 0.0,
) -> None:
    names = {name.lower() for name, _ in headers}
    base = [("Content-Length", str(len(body))), ("x-typesafe-request-id", "req_fake")]
    if "content-type" not in names:
        base.append(("Content-Type", "application/json"))
    out = conn.send(h11.Response(status_code=status, headers=base + headers)) or b""
    if stall_s > 0:  # headers and half the body now, the rest after the stall
        half = len(body) // 2
        await stream.send_all(out + (conn.send(h11.Data(data=body[:half])) or b""))
        await trio.sleep(stall_s)
        out, body = b"", body[half:]
    out += conn.send(h11.Data(data=body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(out)


async def _handle(fake: FakeJev, stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
    try:
        while True:
            event = await _next_event(conn, stream)
            if not isinstance(event, h11.Request):
                return
            raw = b""
            while True:
                part = await _next_event(conn, stream)
                if isinstance(part, h11.Data):
                    raw += part.data
                elif isinstance(part, h11.EndOfMessage):
                    break
                else:
                    return
            await _answer(fake, conn, stream, event, raw)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
        return
    finally:
        await stream.aclose()


async def _answer(
    fake: FakeJev, conn: h11.Connection, stream: trio.SocketStream, req: h11.Request, raw: bytes
) -> None:
    method = req.method.decode("ascii", "replace")
    path = req.target.decode("ascii", "replace")
    headers: dict[str, str] = {}
    auth: str | None = None
    for name, value in req.headers:
        key = name.decode("latin-1").lower()
        if key == "authorization":
            auth = value.decode("latin-1")
        else:
            headers[key] = value.decode("latin-1")
    try:
        body: Any = json.loads(raw) if raw else None
    except ValueError:
        body = None
    auth_ok = None if fake.expect_key is None else auth == f"Bearer {fake.expect_key}"
    entry_index: int | None = None
    entry: dict[str, Any] = {}
    if method != "POST" or path.split("?", 1)[0] != PATH:
        reply: tuple[int, list[tuple[str, str]], bytes]
        reply = (404, [], json.dumps({"detail": "Not Found"}).encode())
    elif auth_ok is False:
        reply = (401, [], json.dumps(_detail(401)).encode())
    else:
        entry_index, entry = fake.next_entry()
        reply = fake.respond(entry, body)
    row = {
        "method": method,
        "path": path,
        "headers": headers,
        "auth_ok": auth_ok,
        "body": body,
        "entry": entry_index,
        "status": reply[0],
        "at": trio.current_time(),
    }
    fake.record.append(row)
    if fake.on_record is not None:
        fake.on_record(row)
    delay = entry.get("delay_s")
    if isinstance(delay, int | float) and delay > 0:
        await trio.sleep(float(delay))
    stall = entry.get("stall_body_s")
    await _send(conn, stream, *reply, float(stall) if isinstance(stall, int | float) else 0.0)


async def serve_fake_jev(
    script: list[dict[str, Any]],
    record: list[dict[str, Any]] | None = None,
    *,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``script`` on 127.0.0.1 (a free port, reported through ``task_status``) until
    cancelled, appending every request to ``record``."""
    fake = FakeJev(script, record, on_record)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = int(listeners[0].socket.getsockname()[1])

    async def handler(stream: trio.SocketStream) -> None:
        await _handle(fake, stream)

    async with trio.open_nursery() as nursery:
        task_status.started(port)
        await trio.serve_listeners(handler, listeners, handler_nursery=nursery)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def _main(args: argparse.Namespace) -> None:
    script = json.loads(Path(args.script).read_text())
    if not isinstance(script, list):
        raise SystemExit("the script must be a JSON list of objects")
    out = open(args.record, "a", encoding="utf-8") if args.record else None  # noqa: SIM115

    def write(row: dict[str, Any]) -> None:
        if out is not None:
            out.write(json.dumps(row) + "\n")
            out.flush()

    try:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve_fake_jev, script, on_record=write))
            _write_atomic(Path(args.port_file), f"{port}\n")
    finally:
        if out is not None:
            out.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted fake of the System One decision API")
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    parser.add_argument("--script", required=True, help="JSON list of script entries")
    parser.add_argument("--record", help="append every request as one JSON line")
    args = parser.parse_args(argv)
    try:
        trio.run(_main, args)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()

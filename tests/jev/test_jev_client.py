"""JevClient over real loopback HTTP against the scripted fake System One server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from peers.fake_jev import BODY_MARKER, serve_fake_jev
from structlog.testing import capture_logs

from deskhand_d.ax import Candidate, Element
from deskhand_d.errors import (
    JevInvalidResponse,
    JevRejected,
    JevTimeout,
    JevUnavailable,
    MissingJevKey,
)
from deskhand_d.jev.client import JevClient, load_key, resolve_url
from deskhand_d.jev.types import Decision
from deskhand_d.jev.wire import DEFAULT_URL

KEY = "tsk-test-4f9c2e17b0d8a6"
ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "peers" / "fake_jev.py"


def cand(index: int, label: str) -> Candidate:
    el = Element(index=index, depth=1, role="button", source_role="button", label=label)
    return Candidate(element=el, score=0)


CANDS = [cand(11, "previous month"), cand(12, "Today"), cand(13, "next month")]
PICK = {"target": "i11", "action": "click_element", "confidence": 0.9, "done": 0.0, "risk": 0.0}


async def decide(client: JevClient, candidates: list[Candidate] = CANDS) -> Decision:
    return await client.decide(
        goal="go to the previous month",
        app="Calendar",
        candidates=candidates,
        context="Window: Calendar\n59 text Value: September 2026",
        recent_actions=["opened Calendar"],
        constraints="Do not create events",
    )


async def fake(
    nursery: trio.Nursery, script: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    record: list[dict[str, Any]] = []
    port = await nursery.start(serve_fake_jev, [{"expect_key": KEY}, *script], record)
    return f"http://127.0.0.1:{port}/v1/systemone", record


def client(url: str, **kw: Any) -> JevClient:
    kw.setdefault("timeout_s", 5.0)
    return JevClient(key=KEY, url=url, **kw)


async def test_valid_answers(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"pick": PICK}])
    async with client(url) as c:
        d = await decide(c)
    assert d.action == "click_element"
    assert d.target_index == 11
    assert d.confidence == 0.9
    assert d.done == 0.0 and d.risk == 0.0
    assert d.usage == {"input_tokens": 900, "output_tokens": 60}
    assert d.latency_ms >= 0
    [req] = record
    assert req["method"] == "POST" and req["path"] == "/v1/systemone"
    assert req["auth_ok"] is True  # arrived as "Bearer <key>"
    assert "authorization" not in req["headers"]
    assert req["headers"]["content-type"] == "application/json"
    assert list(req["body"]) == ["model", "questions", "state"]
    assert req["body"]["model"] == "jev-latest"
    assert list(req["body"]["questions"]["target"]["criteria"]) == ["i11", "i12", "i13"]


async def test_explicit_answers_and_model(nursery: trio.Nursery) -> None:
    answers = {
        "target": {"type": "choice", "choice": "i13", "confidence": "0.8"},
        "action": {"type": "choice", "choice": "scroll"},
        "done": {"type": "noul", "noul": 0.97},
        "risk": {"type": "noul", "noul": 2},
    }
    url, record = await fake(nursery, [{"answers": answers}])
    async with client(url, model="jev-1.13.0") as c:
        d = await decide(c)
    assert (d.action, d.target_index, d.confidence, d.done, d.risk) == (
        "scroll",
        13,
        0.8,
        0.97,
        None,
    )
    assert record[0]["body"]["model"] == "jev-1.13.0"


async def test_wrong_key_is_rejected(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"pick": PICK}])
    async with JevClient(key="tsk-some-other-key", url=url) as c:
        with pytest.raises(JevRejected, match="401"):
            await decide(c)
    assert [r["auth_ok"] for r in record] == [False]


async def test_429_then_success_honours_retry_after(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"status": 429, "retry_after": "0.2"}, {"pick": PICK}])
    events: list[tuple[str, dict[str, Any]]] = []
    async with client(url, on_event=lambda kind, data: events.append((kind, data))) as c:
        t0 = trio.current_time()
        d = await decide(c)
        elapsed = trio.current_time() - t0
    assert d.target_index == 11
    assert [r["status"] for r in record] == [429, 200]
    assert record[1]["at"] - record[0]["at"] >= 0.2
    assert 0.2 <= elapsed < 0.9  # the server's 0.2 s, not the default 1 s
    assert d.latency_ms >= 200
    assert [(k, e["attempt"]) for k, e in events] == [
        ("request", 1),
        ("response", 1),
        ("request", 2),
        ("response", 2),
    ]
    assert events[1][1]["status"] == 429 and "body" not in events[1][1]
    assert events[3][1]["status"] == 200 and events[3][1]["body"]["model"] == "jev-1.13.0"
    assert events[0][1]["body"]["state"]["app"] == "Calendar"


async def test_503_uses_default_backoff(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"status": 503}, {"pick": PICK}])
    async with client(url) as c:
        t0 = trio.current_time()
        await decide(c)
        assert trio.current_time() - t0 >= 1.0
    assert [r["status"] for r in record] == [503, 200]


@pytest.mark.parametrize("statuses", [[500, 500], [529, 529], [502, 429], [429, 429]])
async def test_5xx_and_429_give_up_after_max_retries(
    nursery: trio.Nursery, statuses: list[int]
) -> None:
    script = [{"status": s, "retry_after": "0.05"} for s in statuses]
    script.append({"pick": PICK})
    url, record = await fake(nursery, script)
    async with client(url, max_retries=1) as c:
        with pytest.raises(JevUnavailable) as info:
            await decide(c)
    assert len(record) == 2
    assert str(statuses[-1]) in str(info.value)
    assert BODY_MARKER not in str(info.value)


async def test_no_retries_when_max_retries_is_zero(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"status": 500}, {"pick": PICK}])
    async with client(url, max_retries=0) as c:
        with pytest.raises(JevUnavailable):
            await decide(c)
    assert len(record) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_4xx_rejected_without_retry(nursery: trio.Nursery, status: int) -> None:
    url, record = await fake(nursery, [{"status": status}, {"pick": PICK}])
    async with client(url, max_retries=3) as c:
        with pytest.raises(JevRejected) as info:
            await decide(c)
    assert len(record) == 1
    assert f"HTTP {status}" in str(info.value)
    assert BODY_MARKER not in str(info.value) and "scripted" not in str(info.value)


@pytest.mark.parametrize(
    "entry",
    [
        {"raw": "not json"},
        {"raw": '{"answers": {"target": '},
        {"raw": ""},
        {"raw": "<html>hi</html>", "headers": {"Content-Type": "text/html"}},
        {"body": {"model": "jev-1.13.0", "usage": {}, "note": BODY_MARKER}},
        {"body": {"answers": [1, 2]}},
        {"body": [1, 2, 3]},
        {"raw": "[" * 200_000},  # nesting deep enough to exhaust the parser's recursion
        {"raw": "x" * ((1 << 20) + 1)},  # over the 1 MiB response cap
        {"raw": b"\xff\xfe{}".decode("latin-1")},  # not UTF-8 once encoded by the fake
    ],
)
async def test_malformed_bodies_are_invalid(nursery: trio.Nursery, entry: dict[str, Any]) -> None:
    url, record = await fake(nursery, [entry, {"pick": PICK}])
    async with client(url, max_retries=2) as c:
        with pytest.raises(JevInvalidResponse) as info:
            await decide(c)
    assert len(record) == 1  # a bad 2xx is never retried
    assert BODY_MARKER not in str(info.value) and "html" not in str(info.value)


async def test_slow_answer_times_out(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"delay_s": 30, "pick": PICK}])
    async with client(url, timeout_s=0.3, max_retries=2) as c:
        t0 = trio.current_time()
        with pytest.raises(JevTimeout) as info:
            await decide(c)
        assert trio.current_time() - t0 < 10  # far below the 30 s the server would take
    assert "desktop" in str(info.value)
    assert len(record) == 1  # a timeout is not retried


async def test_stalled_body_times_out(nursery: trio.Nursery) -> None:
    """The deadline covers reading the body, not only waiting for the headers."""
    url, record = await fake(nursery, [{"stall_body_s": 30, "pick": PICK}])
    async with client(url, timeout_s=0.3) as c:
        t0 = trio.current_time()
        with pytest.raises(JevTimeout):
            await decide(c)
        assert trio.current_time() - t0 < 10  # far below the 30 s the server would take
    assert [r["status"] for r in record] == [200]


async def test_redirect_is_not_followed(nursery: trio.Nursery) -> None:
    elsewhere, other = await fake(nursery, [{"pick": PICK}])
    for status in (302, 307):
        url, record = await fake(nursery, [{"redirect": elsewhere, "status": status}])
        async with client(url, max_retries=2) as c:
            with pytest.raises(JevUnavailable, match="redirect"):
                await decide(c)
        assert len(record) == 1
    assert other == []


async def test_cancellation_is_prompt(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"delay_s": 30, "pick": PICK}])
    async with client(url, timeout_s=20.0) as c:
        t0 = trio.current_time()
        with trio.move_on_after(0.2) as scope:
            await decide(c)
        assert scope.cancelled_caught
        assert trio.current_time() - t0 < 10  # far below the 30 s delay
    assert len(record) == 1


async def test_cancellation_during_backoff(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"status": 429, "retry_after": "10"}, {"pick": PICK}])
    async with client(url) as c:
        with trio.move_on_after(0.3) as scope:
            await decide(c)
    assert scope.cancelled_caught
    assert len(record) == 1


async def test_network_error_is_unavailable() -> None:
    with socket.socket() as s:  # a port that was free a moment ago and has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    events: list[tuple[str, dict[str, Any]]] = []
    async with client(
        f"http://127.0.0.1:{port}/v1/systemone", on_event=lambda k, d: events.append((k, d))
    ) as c:
        with pytest.raises(JevUnavailable):
            await decide(c)
    assert events[-1] == ("error", {"attempt": 1, "kind": "network"})


async def test_empty_candidates_refused_before_io(nursery: trio.Nursery) -> None:
    url, record = await fake(nursery, [{"pick": PICK}])
    async with client(url) as c:
        with pytest.raises(ValueError, match="candidate"):
            await decide(c, candidates=[])
    assert record == []


async def test_key_never_leaks(nursery: trio.Nursery) -> None:
    """Not in log events, exception text or repr, trace events or the client's repr."""
    scenarios: list[list[dict[str, Any]]] = [
        [{"status": 429, "retry_after": "0"}, {"pick": PICK}],
        [{"status": 500, "retry_after": "0"}],
        [{"status": 401}],
        [{"raw": KEY}],
        [{"body": {"echo": BODY_MARKER}}],
        [{"redirect": "https://elsewhere.invalid/"}],
        [{"delay_s": 5}],
    ]
    seen: list[str] = []
    events: list[Any] = []
    with capture_logs() as logs:
        structlog.get_logger("deskhand.jev").warning("probe")  # capture works at all
        for script in scenarios:
            url, _ = await fake(nursery, script)
            c = client(url, timeout_s=0.3, on_event=lambda k, d: events.append((k, d)))
            seen.append(repr(c))
            try:
                await decide(c)
            except Exception as exc:
                seen += [str(exc), repr(exc), repr(exc.args), repr(getattr(exc, "data", None))]
                seen.append(repr(exc.__cause__) + repr(exc.__context__))
            finally:
                await c.aclose()
        with pytest.raises(ValueError) as bad:
            JevClient(key=KEY + "\nX", url=url)
        seen.append(str(bad.value))
    assert len(logs) > len(scenarios)
    assert any(e.get("event") == "jev.retry" for e in logs)
    for entry in logs:
        assert KEY not in repr(entry)
    for text in seen:
        assert KEY not in text
        assert BODY_MARKER not in text
    for kind, data in events:
        assert KEY not in json.dumps(data, default=str), kind
        assert "headers" not in data


def test_client_validation() -> None:
    with pytest.raises(MissingJevKey):
        JevClient(key="  ")
    with pytest.raises(ValueError, match="http"):
        JevClient(key=KEY, url="http://example.com/v1/systemone")
    with pytest.raises(ValueError, match="timeout"):
        JevClient(key=KEY, timeout_s=0)
    with pytest.raises(ValueError, match="retry"):
        JevClient(key=KEY, max_retries=9)
    c = JevClient(key=KEY)
    assert c.url == DEFAULT_URL
    assert KEY not in repr(c) and "JevClient(" in repr(c)


# -- resolve_url ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, DEFAULT_URL),
        ("", DEFAULT_URL),
        ("https://proxy.example.com/typesafe/v1/systemone", None),
        ("http://127.0.0.1:8123/v1/systemone", None),
        ("http://127.3.4.5/v1/systemone", None),
        ("http://[::1]:9000/v1/systemone", None),
        ("http://localhost:9000/v1/systemone", None),
        ("HTTP://LOCALHOST/v1/systemone", None),
    ],
)
def test_resolve_url_accepts(value: str | None, want: str | None) -> None:
    env = {} if value is None else {"DESKHAND_JEV_URL": value}
    assert resolve_url(env) == (want or value)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("http://example.com/v1/systemone", "loopback"),
        ("http://10.0.0.1/v1/systemone", "loopback"),
        ("http://localhost.example.com/", "loopback"),
        ("ftp://127.0.0.1/v1/systemone", "https"),
        ("file:///etc/passwd", "https"),
        ("api.typesafe.ai/v1/systemone", "host|https"),
        ("https://user:s3cret@api.typesafe.ai/v1/systemone", "password"),
        ("https://api.typesafe.ai:99999/", "valid"),
    ],
)
def test_resolve_url_refuses(value: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        resolve_url({"DESKHAND_JEV_URL": value})
    assert "s3cret" not in str(info.value)


# -- load_key ------------------------------------------------------------------------------


def write_env(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_load_key_from_environment() -> None:
    assert load_key({"TYPESAFE_API_KEY": f"  {KEY} "}, None) == KEY
    assert load_key({}, None) is None
    assert load_key({"TYPESAFE_API_KEY": "  "}, None) is None


def test_environment_wins_over_file(tmp_path: Path) -> None:
    f = write_env(tmp_path / "env", "TYPESAFE_API_KEY=from-file\n")
    assert load_key({"TYPESAFE_API_KEY": KEY, "DESKHAND_ENV_FILE": str(f)}, None) == KEY


@pytest.mark.parametrize("var", ["DESKHAND_ENV_FILE", "JEV_CUA_ENV_FILE"])
@pytest.mark.parametrize(
    "line",
    [
        f"TYPESAFE_API_KEY={KEY}",
        f'TYPESAFE_API_KEY="{KEY}"',
        f"TYPESAFE_API_KEY='{KEY}'",
        f"export TYPESAFE_API_KEY = {KEY}  # the key",
    ],
)
def test_load_key_from_private_file(tmp_path: Path, var: str, line: str) -> None:
    f = write_env(tmp_path / "env", f"# secrets\n\nOTHER=1\n{line}\n")
    assert load_key({var: str(f)}, None) == KEY


def test_load_key_default_file(tmp_path: Path) -> None:
    f = write_env(tmp_path / "env", f"TYPESAFE_API_KEY={KEY}\n")
    assert load_key({}, str(f)) == KEY
    assert load_key({}, str(tmp_path / "missing")) is None  # a missing default file is fine
    write_env(f, "OTHER=1\n")
    assert load_key({}, str(f)) is None


def test_missing_named_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_key({"DESKHAND_ENV_FILE": str(tmp_path / "missing")}, None)


def test_group_readable_file_refused(tmp_path: Path) -> None:
    f = write_env(tmp_path / "env", f"TYPESAFE_API_KEY={KEY}\n", mode=0o644)
    with pytest.raises(ValueError) as info:
        load_key({"DESKHAND_ENV_FILE": str(f)}, None)
    assert str(f) in str(info.value) and "chmod 600" in str(info.value)
    assert KEY not in str(info.value)


def test_symlinked_file_refused(tmp_path: Path) -> None:
    real = write_env(tmp_path / "real", f"TYPESAFE_API_KEY={KEY}\n")
    link = tmp_path / "env"
    link.symlink_to(real)
    with pytest.raises(ValueError, match="symbolic link") as info:
        load_key({"DESKHAND_ENV_FILE": str(link)}, None)
    assert KEY not in str(info.value)


def test_malformed_file_names_line_not_contents(tmp_path: Path) -> None:
    f = write_env(tmp_path / "env", f"{KEY}\n")
    with pytest.raises(ValueError, match="line 1") as info:
        load_key({"DESKHAND_ENV_FILE": str(f)}, None)
    assert KEY not in str(info.value)


# -- the fake as a separate process -------------------------------------------------------


async def test_fake_jev_as_a_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"expect_key": KEY}, {"status": 429, "retry_after": "0"}, {"pick": PICK}])
    )
    port_file, record = tmp_path / "port", tmp_path / "record.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(FAKE),
            "--port-file",
            str(port_file),
            "--script",
            str(script),
            "--record",
            str(record),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        with trio.fail_after(10):
            while not port_file.exists():
                assert proc.poll() is None
                await trio.sleep(0.02)
        port = int(port_file.read_text())
        async with client(f"http://127.0.0.1:{port}/v1/systemone") as c:
            d = await decide(c)
        assert d.target_index == 11
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["status"], r["auth_ok"]) for r in rows] == [(429, True), (200, True)]
    assert all("authorization" not in r["headers"] for r in rows)

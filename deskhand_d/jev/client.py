"""The httpx shell around :mod:`deskhand_d.jev.wire`: one decision request to System One.

Runs on trio (httpx's async client works there through anyio). Each attempt has one deadline
that covers connecting, sending and reading the whole response body. Only 429 and 5xx answers
are retried, after :func:`~deskhand_d.jev.wire.backoff_s`; the sleep is an ordinary trio sleep,
so cancelling the caller cancels it too. Redirects are never followed: they would carry the key
and the screen's text to another host.

The key lives in one attribute and in the request header, nowhere else: not in ``repr``, log
events, exception messages or trace events. Exception messages never quote a response body
or the URL either; they name the status or the kind of failure and what to check.
"""

from __future__ import annotations

import contextvars
import json
import os
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import structlog
import trio

from deskhand_d.errors import (
    DeskhandError,
    JevInvalidResponse,
    JevRejected,
    JevTimeout,
    JevUnavailable,
    MissingJevKey,
)
from deskhand_d.jev.settings import (
    KEY_ENV,
    URL_ENV,
    check_key,
    check_url,
    is_loopback,
    load_key,
    resolve_url,
)

__all__ = ["JevClient", "check_url", "client_from_env", "load_key", "resolve_url"]
from deskhand_d.ax import Candidate
from deskhand_d.jev.types import Decision
from deskhand_d.jev.wire import DEFAULT_URL, MODEL, WireError, backoff_s, build_body, normalize

EventHook = Callable[[str, dict[str, Any]], None]
_CALL_HOOK: contextvars.ContextVar[EventHook | None] = contextvars.ContextVar(
    "deskhand_jev_call_hook", default=None
)

MAX_RESPONSE_BYTES = 1 << 20
TIMEOUT_RANGE_S = (0.05, 120.0)
MAX_RETRIES_LIMIT = 5


def _log() -> Any:
    # A fresh proxy per use: the daemon caches loggers on first use, and a module-level proxy
    # would keep whatever configuration was current the first time it logged.
    return structlog.get_logger("deskhand.jev")


class _Attempt:
    """What one HTTP exchange produced (the body only for a 2xx)."""

    __slots__ = ("body", "retry_after", "status")

    def __init__(self, status: int, retry_after: str | None, body: bytes | None) -> None:
        self.status = status
        self.retry_after = retry_after
        self.body = body


class _TooLarge(Exception):
    pass


def network_cause(exc: BaseException, key: str = "") -> str:
    """Why an HTTP exchange failed, in words fit for a message: the system's reason (connection
    refused, name not resolved, a TLS verification failure) found in the exception's chain,
    else the exception's kind. Never the request: httpx's messages do not carry it, and ``key``
    is scrubbed from whatever text is kept all the same."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        link = todo.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed ({link.verify_message or 'no reason'})"
        if isinstance(link, ssl.SSLError):
            return f"TLS failed ({link.reason or type(link).__name__})"
        if isinstance(link, socket.gaierror):
            return f"the host name could not be resolved ({link.strerror or 'no reason'})"
        if isinstance(link, OSError) and link.errno:
            return os.strerror(link.errno).lower()
        if isinstance(link, BaseExceptionGroup):
            todo.extend(link.exceptions)
        todo.extend(e for e in (link.__cause__, link.__context__) if e is not None)
    text = str(exc).strip()
    if key:
        text = text.replace(key, "[REDACTED]")
    name = type(exc).__name__
    return f"{name}: {text[:160]}" if text else name


def _http_error(status: int, attempts: int) -> DeskhandError:
    """The error for a final non-2xx status (its body was never read)."""
    data: dict[str, Any] = {"status": status}
    if 300 <= status < 400:
        return JevUnavailable(
            f"the Jev endpoint answered with a redirect (HTTP {status}), which is never "
            f"followed; point {URL_ENV} at the API host ({DEFAULT_URL}), not the web console",
            data=data,
        )
    if status == 429 or status >= 500:
        return JevUnavailable(
            f"the Jev API kept failing (HTTP {status}) after {attempts} attempt(s); "
            "try again later",
            data={**data, "attempts": attempts},
        )
    if 400 <= status < 500:
        hint = " (check the API key)" if status in (401, 403) else ""
        return JevRejected(f"the Jev API refused the request with HTTP {status}{hint}", data=data)
    return JevUnavailable(f"the Jev API answered with unexpected HTTP {status}", data=data)


class JevClient:
    """Asks System One for one decision at a time. Create once, ``aclose()`` when done."""

    def __init__(
        self,
        *,
        key: str,
        url: str = DEFAULT_URL,
        model: str = MODEL,
        timeout_s: float = 20.0,
        max_retries: int = 1,
        transport: httpx.AsyncBaseTransport | None = None,
        on_event: EventHook | None = None,
    ) -> None:
        key = key.strip()
        if not key:
            raise MissingJevKey(
                f"Jev mode needs a TypeSafe API key: set {KEY_ENV} or put it in the owner-only "
                "env file named by DESKHAND_ENV_FILE"
            )
        self._key = check_key(key, "the caller")
        self.url = check_url(url, source="the Jev URL")
        if not model.strip():
            raise ValueError("the Jev model name is empty")
        self.model = model
        lo, hi = TIMEOUT_RANGE_S
        if not lo <= timeout_s <= hi:
            raise ValueError(f"the Jev timeout must be between {lo} and {hi} seconds")
        if isinstance(max_retries, bool) or not 0 <= max_retries <= MAX_RETRIES_LIMIT:
            raise ValueError(f"the Jev retry count must be between 0 and {MAX_RETRIES_LIMIT}")
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self._on_event = on_event
        host = urlsplit(self.url).hostname or ""
        self._http = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            timeout=httpx.Timeout(self.timeout_s),
            # Environment proxies and ~/.netrc only make sense for the real, remote API.
            trust_env=not is_loopback(host),
        )

    @property
    def endpoint(self) -> str:
        """Scheme, host and port of the URL: where a message may say it failed to connect."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{port}"

    def __repr__(self) -> str:
        return (
            f"JevClient(url={self.url!r}, model={self.model!r}, "
            f"timeout_s={self.timeout_s}, max_retries={self.max_retries})"
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> JevClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _emit(self, kind: str, data: dict[str, Any]) -> None:
        if self._on_event is not None:
            self._on_event(kind, data)
        per_call = _CALL_HOOK.get()
        if per_call is not None:
            per_call(kind, data)

    async def _exchange(self, content: bytes) -> _Attempt:
        headers = {
            "Authorization": f"Bearer {self._key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        async with self._http.stream("POST", self.url, content=content, headers=headers) as resp:
            if not 200 <= resp.status_code < 300:
                # The body of a failure is never read: it may echo the request.
                return _Attempt(resp.status_code, resp.headers.get("retry-after"), None)
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
                raise _TooLarge
            chunks: list[bytes] = []
            size = 0
            # Read to the end even past the cap (the deadline still bounds it): leaving httpx's
            # chain of async generators half-consumed makes trio warn when they are collected.
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size <= MAX_RESPONSE_BYTES:
                    chunks.append(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise _TooLarge
            return _Attempt(resp.status_code, None, b"".join(chunks))

    def _failed(self, attempt: int, kind: str, event: str, **facts: Any) -> None:
        self._emit("error", {"attempt": attempt, "kind": kind})
        _log().warning(event, attempt=attempt, kind=kind, **facts)

    def _parse(self, attempt: int, result: _Attempt, elapsed_ms: int) -> Any:
        """The JSON of a 2xx body; JevInvalidResponse if it is not UTF-8 JSON."""
        event: dict[str, Any] = {"attempt": attempt, "status": result.status}
        event["elapsed_ms"] = elapsed_ms
        try:
            payload = json.loads((result.body or b"").decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            self._emit("response", event)
            self._failed(attempt, "invalid", "jev.invalid_response", reason="not_json")
            raise JevInvalidResponse(
                f"Jev answered HTTP {result.status} with a body that is not JSON",
                data={"status": result.status},
            ) from None
        self._emit("response", {**event, "body": payload})
        return payload

    async def decide(
        self,
        *,
        goal: str,
        app: str,
        candidates: Sequence[Candidate],
        context: str,
        recent_actions: Sequence[str],
        constraints: str,
        on_event: EventHook | None = None,
    ) -> Decision:
        """One decision over ``candidates`` (at least one). Raises a ``Jev*`` error on failure.

        ``on_event`` receives this call's trace events (in addition to the client's own hook);
        it is kept in a context variable, so concurrent runs sharing the client never see each
        other's exchanges.

        ValueError for empty or ambiguous candidates, before any I/O. Cancellation of the
        caller's scope propagates unchanged.
        """
        token = _CALL_HOOK.set(on_event)
        try:
            return await self._decide(goal, app, candidates, context, recent_actions, constraints)
        finally:
            _CALL_HOOK.reset(token)

    async def _decide(
        self,
        goal: str,
        app: str,
        candidates: Sequence[Candidate],
        context: str,
        recent_actions: Sequence[str],
        constraints: str,
    ) -> Decision:
        if not candidates:
            raise ValueError("Jev needs at least one candidate element to choose from")
        body = build_body(
            goal=goal,
            app=app,
            candidates=candidates,
            context=context,
            recent_actions=recent_actions,
            constraints=constraints,
            model=self.model,
        )
        sent = body["questions"]["target"]["criteria"]
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        started = trio.current_time()
        attempts = 1 + self.max_retries
        for attempt in range(1, attempts + 1):
            self._emit("request", {"attempt": attempt, "body": body})
            t0 = trio.current_time()
            try:
                with trio.fail_after(self.timeout_s):
                    result = await self._exchange(content)
            except (trio.TooSlowError, httpx.TimeoutException):
                self._failed(attempt, "timeout", "jev.timeout", timeout_s=self.timeout_s)
                raise JevTimeout(
                    f"Jev did not answer within {self.timeout_s:g} s; this decision dispatched "
                    "nothing on the desktop"
                ) from None
            except _TooLarge:
                self._failed(attempt, "invalid", "jev.invalid_response", reason="too_large")
                raise JevInvalidResponse(
                    f"Jev answered with more than {MAX_RESPONSE_BYTES} bytes; the answer was "
                    "discarded"
                ) from None
            except httpx.HTTPError as exc:
                cause = network_cause(exc, self._key)
                self._failed(
                    attempt, "network", "jev.network_error", error=type(exc).__name__, cause=cause
                )
                where = self.endpoint
                raise JevUnavailable(
                    f"could not reach the Jev API at {where}: {cause}. Check that this computer "
                    f"reaches it, and that {URL_ENV} names the right endpoint (unset, it is "
                    f"{DEFAULT_URL})",
                    data={"cause": cause, "endpoint": where, "error": type(exc).__name__},
                ) from None
            elapsed_ms = round((trio.current_time() - t0) * 1000)
            status = result.status
            if 200 <= status < 300:
                payload = self._parse(attempt, result, elapsed_ms)
                latency_ms = round((trio.current_time() - started) * 1000)
                try:
                    decision = normalize(payload, sent, latency_ms)
                except WireError:
                    self._failed(attempt, "invalid", "jev.invalid_response", reason="no_answers")
                    raise JevInvalidResponse(
                        f"Jev answered HTTP {status} without a valid answers object",
                        data={"status": status},
                    ) from None
                _log().debug(
                    "jev.decided", attempt=attempt, elapsed_ms=elapsed_ms, latency_ms=latency_ms
                )
                return decision

            self._emit("response", {"attempt": attempt, "status": status, "elapsed_ms": elapsed_ms})
            if (status == 429 or status >= 500) and attempt < attempts:
                delay = backoff_s(attempt - 1, result.retry_after)
                _log().info("jev.retry", attempt=attempt, status=status, delay_s=delay)
                await trio.sleep(delay)
                continue
            self._failed(attempt, "http", "jev.http_error", status=status)
            raise _http_error(status, attempts)
        raise AssertionError("unreachable")  # pragma: no cover


def client_from_env(
    env: Mapping[str, str] | None = None,
    *,
    env_file: str | None = None,
    on_event: EventHook | None = None,
) -> JevClient:
    """A client configured from the environment; MissingJevKey if no key is set anywhere."""
    env = os.environ if env is None else env
    key = load_key(env, env_file)
    if key is None:
        raise MissingJevKey(
            f"Jev mode needs a TypeSafe API key: set {KEY_ENV} or put it in the owner-only env "
            "file named by DESKHAND_ENV_FILE"
        )
    return JevClient(key=key, url=resolve_url(env), on_event=on_event)

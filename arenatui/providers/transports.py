"""How the HTTP providers put bytes on the wire: httpx or aiohttp behind one small interface.

A `Wire` only POSTs a body and hands back status, headers and the body (whole or chunk by chunk),
and names which of its library's exceptions are timeouts and which are connection failures.
Everything else (deadline, status mapping, retry-after, secret scrubbing, SSE) lives once in
`arenatui.providers.http`, so both transports behave the same.

Why two (benchmarks/http_overhead.py, DESIGN.md measured limits): client CPU per call is error in
what we measure. httpx 0.28 costs 2.5-3.5 ms per call on loopback, 1.3-1.7 ms with its pool
sharded, against 0.2 ms for aiohttp; so ``auto`` (the default) picks aiohttp wherever it can run,
which is the asyncio backend, and httpx elsewhere (trio).

Pools never cap concurrency: aiohttp's connector is unlimited and httpx grows one more shard of
`HTTPX_SHARD` connections whenever every shard is busy, so raising concurrency mid-run can never
queue requests inside the client, where the wait would be counted as the provider's latency.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import sniffio

if TYPE_CHECKING:
    import ssl

    import aiohttp
    import httpx

HTTPX_SHARD = 8
"""Connections per httpx client: its pool's cost grows with connections × waiting requests, so many
small pools cost about half of one big one (measured: 2.8 → 1.3 ms per call at 16 in flight)."""


class WireResponse(Protocol):
    status: int
    headers: Mapping[str, str]

    @property
    def sent_at(self) -> float | None:
        """`time.monotonic()` when the request went onto the socket (after connecting and TLS, after
        waiting for this client's own event loop), or None where the transport cannot tell (a fake one)."""
        ...

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, in whatever pieces the network gives (one iterator: call it once)."""
        ...

    async def rest(self) -> bytes:
        """What is left of the body once `chunks` was left early, in one piece."""
        ...

    async def read(self) -> bytes:
        ...


class Wire(Protocol):
    name: str
    timeout_errors: tuple[type[BaseException], ...]
    """Exceptions of this library meaning a timeout."""
    errors: tuple[type[BaseException], ...]
    """Exceptions meaning the exchange failed (refused, reset, protocol error, body cut short)."""

    def post(self, url: str, body: bytes) -> AbstractAsyncContextManager[WireResponse]:
        ...

    def warm(self) -> None:
        """Create now what the first request would (session, pool, TLS context), inside the running loop."""
        ...

    async def aclose(self) -> None:
        ...


def resolve(name: str) -> str:
    """The transport ``auto`` means here: aiohttp on asyncio (it runs on no other loop), httpx otherwise."""
    if name != "auto":
        return name
    try:
        return "aiohttp" if sniffio.current_async_library() == "asyncio" else "httpx"
    except sniffio.AsyncLibraryNotFoundError:
        return "httpx"


# ---- httpx ---------------------------------------------------------------------------------------


class _Sent:
    """Filled in by a transport's trace hook when the request's bytes are handed to the socket."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None


class _HttpxResponse:
    __slots__ = ("_it", "_r", "_sent", "headers", "status")

    def __init__(self, r: httpx.Response, sent: _Sent) -> None:
        self._r = r
        self._it: AsyncIterator[bytes] | None = None
        self._sent = sent
        self.status = r.status_code
        self.headers: Mapping[str, str] = r.headers

    @property
    def sent_at(self) -> float | None:
        return self._sent.at

    def chunks(self) -> AsyncIterator[bytes]:
        self._it = self._r.aiter_bytes()
        return self._it

    async def rest(self) -> bytes:
        # on in the same iterator (httpx allows one per response): `async for` left early does not close it
        return b"".join([c async for c in (self._it or self.chunks())])

    async def read(self) -> bytes:
        return await self._r.aread()


class _Shard:
    __slots__ = ("busy", "client")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.busy = 0


class HttpxWire:
    """httpx clients of `HTTPX_SHARD` connections each, one more whenever all are busy; no httpx retries."""

    name = "httpx"
    timeout_errors: tuple[type[BaseException], ...]
    errors: tuple[type[BaseException], ...]

    def __init__(self, headers: Mapping[str, str], timeout_s: float,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        # Imported only when used, like aiohttp: httpx's own import pulls in its command line (click, pygments,
        # rich's console), a fifth of `arena evaluate`'s start-up on the asyncio backend, which never uses it.
        import httpx

        self.timeout_errors = (httpx.TimeoutException,)
        self.errors = (httpx.HTTPError,)
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._transport = transport
        self._shard_size = HTTPX_SHARD if transport is None else 1 << 30  # a fake transport has no pool
        self._shards: list[_Shard] = []

    def _client(self) -> httpx.AsyncClient:
        import httpx  # loaded by __init__: a dictionary lookup here

        n = self._shard_size
        return httpx.AsyncClient(
            headers=self._headers,
            # Per-operation timeouts at the call's ceiling; the whole-call deadline is the cancel scope in
            # HttpProvider.complete, which is what stops a server that trickles one byte at a time.
            timeout=httpx.Timeout(self._timeout_s),
            transport=self._transport or httpx.AsyncHTTPTransport(
                retries=0, limits=httpx.Limits(max_connections=n, max_keepalive_connections=n)),
            follow_redirects=False,
            trust_env=False,
        )

    def _pick(self) -> _Shard:
        size = self._shard_size
        for s in self._shards:  # first fit keeps the early shards' connections warm
            if s.busy < size:
                return s
        s = _Shard(self._client())
        self._shards.append(s)
        return s

    @asynccontextmanager
    async def post(self, url: str, body: bytes) -> AsyncIterator[WireResponse]:
        shard = self._pick()
        shard.busy += 1
        sent = _Sent()

        async def trace(event: str, info: object) -> None:
            # httpcore's events: connection.connect_tcp.*, connection.start_tls.*, http11.send_request_headers.*...
            if event.endswith("send_request_headers.started"):
                sent.at = time.monotonic()

        try:
            async with shard.client.stream("POST", url, content=body, extensions={"trace": trace}) as r:
                yield _HttpxResponse(r, sent)
        finally:
            shard.busy -= 1

    def warm(self) -> None:
        if not self._shards:
            self._shards.append(_Shard(self._client()))

    @property
    def shards(self) -> int:
        return len(self._shards)

    async def aclose(self) -> None:
        shards, self._shards = self._shards, []
        for s in shards:
            await s.client.aclose()


# ---- aiohttp -------------------------------------------------------------------------------------


class _AiohttpResponse:
    __slots__ = ("_r", "headers", "sent_at", "status")

    def __init__(self, r: aiohttp.ClientResponse) -> None:
        self._r = r
        # the request's writer has run by the time its response's headers came back
        req = getattr(r, "arena_request", None)
        self.sent_at: float | None = None if req is None else req.arena_sent_at
        self.status = r.status
        self.headers: Mapping[str, str] = r.headers

    def chunks(self) -> AsyncIterator[bytes]:
        return self._r.content.iter_any()

    async def rest(self) -> bytes:
        return await self._r.content.read()

    async def read(self) -> bytes:
        return await self._r.read()


class _AiohttpPost:
    """aiohttp's request context as a `WireResponse` one: a class, not an `asynccontextmanager` (whose generator
    costs a few microseconds a call)."""

    __slots__ = ("_cm",)

    def __init__(self, cm: Any) -> None:
        self._cm = cm

    async def __aenter__(self) -> WireResponse:
        return _AiohttpResponse(await self._cm.__aenter__())

    async def __aexit__(self, *exc: object) -> None:
        await self._cm.__aexit__(*exc)


class AiohttpWire:
    """One aiohttp session with an unlimited connector (the engine bounds concurrency, not the pool).

    The session is opened on first use because aiohttp binds it to the running event loop.
    """

    name = "aiohttp"
    timeout_errors: tuple[type[BaseException], ...]
    errors: tuple[type[BaseException], ...]

    def __init__(self, headers: Mapping[str, str], timeout_s: float, *, tls: bool = True) -> None:
        import aiohttp  # imported only when used: it is not needed to start the app

        self._aiohttp = aiohttp
        # TimeoutError first: aiohttp's ServerTimeoutError is both a ClientError and a TimeoutError.
        self.timeout_errors = (TimeoutError,)
        self.errors = (aiohttp.ClientError, OSError)
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._tls = tls
        """False for a plain-http base URL (a local server): no TLS context to build (loading the CA bundle is
        ~40 ms of the start-up before the first request), and nothing would use one (redirects are not followed)."""

    def _open(self) -> aiohttp.ClientSession:
        aiohttp = self._aiohttp
        self._session = aiohttp.ClientSession(
            headers=self._headers,
            # certifi's CA bundle, as httpx uses: both transports trust the same servers on any system
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0, ssl=_certifi_context() if self._tls else False),
            # No read timeout: the call's deadline (HttpProvider.complete) ends any wait for bytes, and a read timeout
            # costs a timer moved on every chunk received (most of a streamed answer's chunks).
            timeout=aiohttp.ClientTimeout(total=None, connect=self._timeout_s),
            trust_env=False,
            raise_for_status=False,
            request_class=_stamped_request_class(),
        )
        return self._session

    def warm(self) -> None:
        if self._session is None:
            self._open()

    def post(self, url: str, body: bytes) -> AbstractAsyncContextManager[WireResponse]:
        session = self._session or self._open()
        return _AiohttpPost(session.post(url, data=body, allow_redirects=False))

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _certifi_context() -> ssl.SSLContext:
    import ssl

    import certifi

    return ssl.create_default_context(cafile=certifi.where())


_REQUEST_CLASS: type[aiohttp.ClientRequest] | None = None


def _stamped_request_class() -> type[aiohttp.ClientRequest]:
    """aiohttp's request, stamping when its bytes leave.

    aiohttp (on Python < 3.12) writes the request from a task of its own, one event-loop turn after `post` was
    called, so a burst of N new requests puts N requests' worth of our own work between "post" and "sent". That
    wait is ours, not the provider's: the stamp is the real moment, taken as the writer starts (headers and body
    leave together in its first write). A subclass rather than a trace hook: aiohttp's tracing builds and awaits
    a signal per request stage and per body chunk received, a fifth of the client's CPU per streamed call
    (cProfile, benchmarks/http_overhead.py)."""
    global _REQUEST_CLASS
    if _REQUEST_CLASS is None:
        from aiohttp import ClientRequest, ClientResponse
        from aiohttp.abc import AbstractStreamWriter

        class StampedRequest(ClientRequest):
            arena_sent_at: float | None = None

            async def write_bytes(self, writer: AbstractStreamWriter, conn: Any,
                                  content_length: int | None = None) -> None:
                self.arena_sent_at = time.monotonic()
                await super().write_bytes(writer, conn, content_length)

            async def send(self, conn: Any) -> ClientResponse:
                resp = await super().send(conn)
                # on Python < 3.12 the writer runs later than this (its own task): the response keeps the request,
                # whose stamp `_AiohttpResponse` reads once the response's headers came
                resp.arena_request = self  # type: ignore[attr-defined]
                return resp

        _REQUEST_CLASS = StampedRequest
    return _REQUEST_CLASS


def open_wire(name: str, headers: Mapping[str, str], timeout_s: float,
              httpx_transport: httpx.AsyncBaseTransport | None = None, *, tls: bool = True) -> Wire:
    """A wire for a resolved transport name ('httpx' or 'aiohttp'); a fake httpx transport forces httpx. `tls`
    False: the URL is plain http (no TLS context is built)."""
    if name == "aiohttp" and httpx_transport is None:
        return AiohttpWire(headers, timeout_s, tls=tls)
    return HttpxWire(headers, timeout_s, httpx_transport)

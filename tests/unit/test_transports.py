"""The HTTP transports: the config key, which one ``auto`` picks, and pools that grow instead of queueing."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from arenatui.config.schema import ModelConfig, RunSettings
from arenatui.kernel.errors import ConfigError
from arenatui.project import load_project
from arenatui.providers.openai import OpenAIProvider
from arenatui.providers.transports import HttpxWire, resolve

CASES = '[[cases]]\nid = "q1"\ninput = "2+2?"\nexpected = "4"\n'


def _project(tmp_path: Path, transport: str) -> Path:
    p = tmp_path / "arena.toml"
    p.write_text(f'[[models]]\nkey = "a"\nprovider = "openai"\nbase_url = "http://x/v1"\ntransport = "{transport}"\n'
                 + CASES, encoding="utf-8")
    return p


@pytest.mark.parametrize("name", ["auto", "httpx", "aiohttp"])
def test_transport_key_is_read(tmp_path: Path, name: str) -> None:
    assert load_project(_project(tmp_path, name)).models[0].transport == name


def test_bad_transport_suggests(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_project(_project(tmp_path, "aiohtp"))
    assert info.value.key == "models[0].transport" and "did you mean 'aiohttp'?" in info.value.expected


def test_auto_is_aiohttp_on_asyncio_only() -> None:
    async def inside() -> str:
        return resolve("auto")

    assert anyio.run(inside) == "aiohttp"
    assert resolve("auto") == "httpx"  # no event loop running: nothing to bind aiohttp to
    assert resolve("httpx") == "httpx"


def test_httpx_pool_grows_a_shard_when_every_connection_is_busy() -> None:
    wire = HttpxWire({}, 5.0, httpx.MockTransport(lambda r: httpx.Response(200, content=b"{}")))
    wire._shard_size = 2  # as a real pool would be, but small

    async def go() -> list[int]:
        seen = []
        async with wire.post("http://t/", b"{}"), wire.post("http://t/", b"{}"):
            seen.append(wire.shards)
            async with wire.post("http://t/", b"{}") as r:
                seen.append(wire.shards)
                assert r.status == 200 and await r.read() == b"{}"
        async with wire.post("http://t/", b"{}"):
            seen.append(wire.shards)  # a free connection in the first shard is used again
        await wire.aclose()
        return seen

    assert anyio.run(go) == [1, 2, 2]


def test_provider_reports_the_chosen_transport() -> None:
    model = ModelConfig(key="m", provider="openai", model="mm", base_url="http://t/v1", transport="httpx")
    provider = OpenAIProvider(model, RunSettings())

    async def go() -> str:
        try:
            return provider.wire.name
        finally:
            await provider.aclose()

    assert anyio.run(go) == "httpx"


@pytest.mark.parametrize(("base_url", "tls"), [("http://127.0.0.1:8000/v1", False), ("HTTPS://api.example/v1", True)])
def test_a_plain_http_server_gets_no_tls_context(base_url: str, tls: bool) -> None:
    """A local server over http builds no TLS context (the CA bundle's load is start-up time); https keeps one."""
    # not streamed: no template probe (nothing listens there)
    model = ModelConfig(key="m", provider="openai", model="mm", base_url=base_url, transport="aiohttp", stream=False)
    provider = OpenAIProvider(model, RunSettings())

    async def go() -> object:
        try:
            assert provider.prepare() is None
            session = provider.wire._session  # type: ignore[attr-defined]
            return session.connector._ssl
        finally:
            await provider.aclose()

    ssl_setting = anyio.run(go, backend="asyncio")
    if tls:
        import ssl

        assert isinstance(ssl_setting, ssl.SSLContext) and ssl_setting.verify_mode == ssl.CERT_REQUIRED
    else:
        assert ssl_setting is False

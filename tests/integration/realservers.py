"""The conformance tier's servers: llama-cpp-python's OpenAI-compatible server and the litellm proxy, installed by
scripts/install_servers.sh under $ARENATUI_SERVERS (default ~/.cache/arenatui/servers), and a raw HTTP client that
records exactly what they send.

Each fixture skips, naming the missing piece and the command that installs it, when a server or the model is absent.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from httpkit import start_server, stop_server

SERVERS = Path(os.environ.get("ARENATUI_SERVERS") or Path.home() / ".cache" / "arenatui" / "servers")
LLAMA_PY = SERVERS / "llama" / "bin" / "python"
MODEL = SERVERS / "models" / "gemma-3-270m-q4_k_m.gguf"
LITELLM = SERVERS / "litellm" / "bin" / "litellm"
MODEL_ALIAS = "gemma-3-270m"
LITELLM_KEY = "sk-arenatui-conformance-0123456789abcdef"
"""The proxy's master key (loopback only, a test value): clients send it as their Bearer key."""
LITELLM_KEY_ENV = "ARENATUI_CONFORMANCE_LITELLM_KEY"
INSTALL = "run `bash scripts/install_servers.sh` (about 10-25 minutes once: it builds llama-cpp-python)"

servers = pytest.mark.servers
"""The conformance tier's marker: `pytest -m servers` runs only it, `-m 'not servers'` leaves it out."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT
    lines: list[str]  # what the server printed (its log)


def need_llama() -> None:
    if not LLAMA_PY.exists():
        pytest.skip(f"llama-cpp-python's server is not installed in {SERVERS / 'llama'}: {INSTALL}")
    if not MODEL.exists():
        pytest.skip(f"the conformance model {MODEL} is absent: {INSTALL}")


def llama_server(*extra: str) -> Iterator[Server]:
    """`python -m llama_cpp.server` on a free loopback port with one thread (one answer at a time, as the issue's
    measurements ran it), default settings otherwise (interrupt_requests on)."""
    need_llama()
    port = free_port()
    argv = [str(LLAMA_PY), "-m", "llama_cpp.server", "--model", str(MODEL), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "1024",
            # the GGUF has no chat template: without this the fallback (llama-2) makes every answer empty
            "--chat_format", "gemma", *extra]
    # unbuffered: its "Disconnected" lines (an interrupted stream) reach the test as they are printed
    proc, _, lines = start_server(argv, r"Uvicorn running on", timeout_s=120.0,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        yield Server(f"http://127.0.0.1:{port}", lines)
    finally:
        stop_server(proc)


def litellm_proxy(tmp: Path, upstream: str, rpm: dict[str, int]) -> Iterator[Server]:
    """The litellm proxy in front of `upstream` (an OpenAI-compatible base URL ending in /v1): one model group per
    entry of `rpm` (name -> requests-per-minute limit), each serving the upstream's one model.

    `num_retries = 0`: by default litellm's router does not refuse a request over the limit, it waits for the window
    and retries inside the proxy (a 200 after 60 s); refusing is what a benchmark must see."""
    if not LITELLM.exists():
        pytest.skip(f"the litellm proxy is not installed in {SERVERS / 'litellm'}: {INSTALL}")
    cfg = tmp / "litellm.yaml"
    # YAML is a superset of JSON: no YAML writer needed.
    cfg.write_text(json.dumps({
        "model_list": [{"model_name": name, "litellm_params": {
            "model": f"openai/{MODEL_ALIAS}", "api_base": upstream, "api_key": "none", "rpm": limit}}
            for name, limit in rpm.items()],
        "router_settings": {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        # 1.108 refuses to start without a master key
        "general_settings": {"master_key": LITELLM_KEY},
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }), encoding="utf-8")
    port = free_port()
    # its bundled cost map: otherwise it tries to fetch one from the internet at start-up
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
    argv = [str(LITELLM), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port)]
    proc, _, lines = start_server(argv, r"Uvicorn running on", timeout_s=240.0, env=env)
    try:
        yield Server(f"http://127.0.0.1:{port}", lines)
    finally:
        stop_server(proc)


# ---- a raw client: exactly what came back ------------------------------------------------------------------


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: list[str] = field(default_factory=list)  # SSE `data:` payloads, in order ("[DONE]" included)
    comments: list[str] = field(default_factory=list)  # SSE comment lines (pings)

    def chunks(self) -> list[dict[str, Any]]:
        return [json.loads(e) for e in self.events if e != "[DONE]"]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def finish_reasons(self) -> list[Any]:
        return [c.get("finish_reason") for ch in self.chunks() for c in ch.get("choices") or []]

    @property
    def text(self) -> str:
        return "".join((c.get("delta") or {}).get("content") or "" for ch in self.chunks()
                       for c in ch.get("choices") or [])


def open_request(url: str, path: str, body: dict[str, Any], timeout: float = 120.0) -> http.client.HTTPResponse:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json",
                                                  "authorization": f"Bearer {LITELLM_KEY}"})
    return conn.getresponse()


def read_response(resp: http.client.HTTPResponse, on_event: Any = None) -> RawResponse:
    """Read a whole response; an event stream is split into its `data:` payloads (on_event sees each as it comes)."""
    out = RawResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()})
    if not out.headers.get("content-type", "").startswith("text/event-stream"):
        out.body = resp.read()
        return out
    while True:
        line = resp.readline()
        if not line:
            break
        s = line.decode("utf-8").rstrip("\r\n")
        if s.startswith("data:"):
            out.events.append(s[5:].strip())
            if on_event is not None:
                on_event(out.events[-1])
        elif s.startswith(":"):
            out.comments.append(s)
    return out


def post(url: str, path: str, body: dict[str, Any]) -> RawResponse:
    return read_response(open_request(url, path, body))


def chat(messages_text: str, **kw: Any) -> dict[str, Any]:
    return {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": messages_text}], **kw}


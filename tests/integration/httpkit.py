"""Helpers for the HTTP integration tests: the models the mock server serves, servers as subprocesses, real sweeps.

One `arena mock-server` subprocess per test session (per xdist worker) serves every model the tests
use; each test writes a small client project naming the models it needs and runs a real sweep
through the providers, the engine and the store.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.plan import Filters
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store

FAST_SIM: dict[str, Any] = {"base_latency_s": 0.004, "per_token_s": 0.0002, "jitter": 0.0, "output_tokens": 8,
                            "accuracy": 1.0}
CASES: list[dict[str, Any]] = [
    {"id": "capital", "input": "What is the capital of France?", "expected": "Paris", "stratum": "easy"},
    {"id": "sum", "input": "What is 17 + 25?", "expected": "42", "stratum": "easy"},
    {"id": "choice", "input": "Largest planet? A) Mars B) Jupiter. Letter only.", "expected": "B",
     "stratum": "hard"},
]
TRANSIENT_FAULTS = ("500", "503", "529", "408", "409", "reset", "malformed", "truncated", "interrupted")
TERMINAL_FAULTS = ("400", "401", "403", "404", "422")
TIMEOUT_FAULTS = ("hang", "trickle")
RETRY_AFTER_FORMS = ("ms", "seconds", "date", "both", "llm_provider", "openai_reset", "anthropic_reset", "none")
PROVIDERS = {"oa": "openai", "an": "anthropic"}
WIRES = ("httpx", "aiohttp")
"""The HTTP transports a provider test runs over: behaviour must not depend on the client library."""


def _model(key: str, prefix: str, stream: bool = True, **sim: Any) -> dict[str, Any]:
    return {"key": key, "provider": PROVIDERS[prefix], "model": key, "stream": stream,
            "sim": {**FAST_SIM, **sim}}


def server_models() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every model the integration tests use, and the [mock.models] fault table for the server."""
    models: list[dict[str, Any]] = []
    mock: dict[str, dict[str, Any]] = {}
    for p in PROVIDERS:
        models += [_model(f"{p}-ok", p), _model(f"{p}-ok-ns", p, stream=False),
                   _model(f"{p}-long", p, output_tokens=200),
                   _model(f"{p}-long-ns", p, stream=False, output_tokens=200),
                   _model(f"{p}-limited", p, rpm=240, burst=1.0, reject_cost=0.0),
                   _model(f"{p}-serial", p, base_latency_s=0.04, per_token_s=0.0, serial=True),
                   # first token at once, the answer (max_tokens 32) 3 s or more: slow, not hung
                   _model(f"{p}-slow-stream", p, base_latency_s=0.01, per_token_s=0.2, output_tokens=200),
                   _model(f"{p}-echo", p), _model(f"{p}-echo-5xx", p),
                   # one slot, a stream stopped when another request waits (llama-cpp-python): 8 tokens in 80 ms
                   _model(f"{p}-single-slot", p, base_latency_s=0.01, per_token_s=0.01)]
        mock[f"{p}-single-slot"] = {"single_slot": True}
        # the same slot on a reasoning model: 20 tokens of reasoning over 2 s before the answer
        models.append(_model(f"{p}-reason-single-slot", p, reasoning_tokens=20, reasoning_per_token_s=0.1,
                             exact_timing=True))
        mock[f"{p}-reason-single-slot"] = {"single_slot": True}
        # reasoning models: 20 tokens of reasoning at 5 ms each (100 ms between the first token and the answer's),
        # and one whose reasoning uses up max_tokens (32) before any answer
        models += [_model(f"{p}-reason", p, reasoning_tokens=20, reasoning_per_token_s=0.005, exact_timing=True),
                   _model(f"{p}-reason-ns", p, stream=False, reasoning_tokens=20, reasoning_per_token_s=0.001),
                   _model(f"{p}-reason-cut", p, reasoning_tokens=40, reasoning_per_token_s=0.0)]
        # declared rate limits: the truth (sim.rpm), and a lie
        models += [_model(f"{p}-declared", p, rpm=600), _model(f"{p}-declared-lie", p)]
        mock[f"{p}-declared"] = {"declare_limits": True, "declared_tpm": 40000}
        mock[f"{p}-declared-lie"] = {"declared_rpm": 90}
        mock[f"{p}-echo"] = {"faults": ["401"], "echo_headers": True}
        mock[f"{p}-echo-5xx"] = {"faults": ["500"], "echo_headers": True}
        for f in (*TRANSIENT_FAULTS, *TERMINAL_FAULTS, *TIMEOUT_FAULTS):
            for stream in (True, False):
                key = f"{p}-{f}" + ("" if stream else "-ns")
                models.append(_model(key, p, stream=stream))
                mock[key] = {"faults": [f], "trickle_s": 0.05}
        for form in RETRY_AFTER_FORMS:
            key = f"{p}-429-{form}"
            models.append(_model(key, p))
            mock[key] = {"faults": ["429"], "retry_after": form, "retry_after_s": 0.3}
    return models, mock


def write_project(path: Path, base: str, models: Sequence[dict[str, Any]], run: dict[str, Any] | None = None,
                  mock: dict[str, dict[str, Any]] | None = None, transport: str | None = None) -> Path:
    """A project TOML whose models point at the server at `base` (http://host:port), over `transport` if given."""
    out_models = []
    for m in models:
        m = dict(m)
        m["base_url"] = f"{base}/v1" if m["provider"] == "openai" else base
        if transport is not None:
            m["transport"] = transport
        out_models.append(m)
    doc: dict[str, Any] = {
        "project": {"name": path.stem},
        "defaults": {"max_tokens": 32, "system": "Answer with the answer only."},
        "run": {"concurrency": 8, "timeout_s": 5.0, "max_attempts": 3, "backoff_base_s": 0.01,
                "backoff_cap_s": 0.05, "seed": 3, **(run or {})},
        "models": out_models,
        "cases": CASES,
    }
    if mock:
        doc["mock"] = {"models": mock}
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


@dataclass
class MockServerProcess:
    url: str
    proc: subprocess.Popen[str]
    models: dict[str, dict[str, Any]]
    lines: list[str] = field(default_factory=list)


def start_server(argv: Sequence[str], pattern: str, timeout_s: float = 15.0,
                 cwd: Path | None = None, env: Mapping[str, str] | None = None,
                 ) -> tuple[subprocess.Popen[str], re.Match[str], list[str]]:
    """Start a server subprocess and wait for the line that says where it listens."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                            encoding="utf-8", errors="replace",
                            env=env)
    lines: list[str] = []
    found: list[re.Match[str]] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = re.search(pattern, line)
            if m and not found:
                found.append(m)
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    ready.wait(timeout_s)
    if not found:
        stop_server(proc)
        raise RuntimeError(f"{argv[0]} did not start: {''.join(lines)[-2000:]}")
    return proc, found[0], lines


def stop_server(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class SweepOutcome:
    run_id: str
    db: Path
    status: str
    events: list[Any]
    rows: dict[tuple[str, str, int], dict[str, Any]]

    def by_model(self, key: str) -> list[dict[str, Any]]:
        return [r for (m, _, _), r in sorted(self.rows.items()) if m == key]

    def of(self, kind: type, model: str | None = None) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind) and (model is None or e.model_key == model)]


def run_sweep(tmp_path: Path, base: str, models: Sequence[dict[str, Any]], *, run: dict[str, Any] | None = None,
              limit: int | None = None, name: str = "client", transport: str | None = None) -> SweepOutcome:
    """A real sweep (providers, engine, store) against `base`; returns the stored rows and the events."""
    project = write_project(tmp_path / f"{name}.toml", base, models, run, transport=transport)
    db = tmp_path / f"{name}.db"
    events: list[Any] = []
    sweep = Sweep(SweepOptions(project=project, db=db, filters=Filters(limit=limit)), extra_sinks=(events.append,))
    status = anyio.run(sweep.run)
    with Store(db) as store:
        rows = {}
        for r in store.results(sweep.run_id, ("model_key", "case_id", "trial")):
            row = store.result(sweep.run_id, r[0], r[1], r[2])
            assert row is not None
            rows[(r[0], r[1], r[2])] = row
    return SweepOutcome(sweep.run_id, db, status, events, rows)

"""The bundled mock server answers each prompt variant with its own accuracy (sim.prompt_accuracy), end to end: an
`arena mock-server` on 127.0.0.1 serving an OpenAI and an Anthropic model, `arena evaluate` sweeping them under three
variants (a template, a system prompt alone, the case as written), and each model × variant pass rate within a
binomial tolerance of its configured accuracy. The server is told nothing but the prompts themselves."""

from __future__ import annotations

import math
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from httpkit import FAST_SIM, start_server, stop_server

from arenatui.cli import main

CASES = [{"id": f"c{i}", "input": f"What is item {i}?", "expected": f"a{i}"} for i in range(80)]
TRIALS = 3
PROMPTS = [{"name": "plain"},
           {"name": "framed", "template": "Question: {input}\nAnswer with the answer only."},
           {"name": "careful", "system": "Think it through, then answer."}]
ACCURACY = {"oa": {"plain": 0.9, "framed": 0.6, "careful": 0.3},
            "an": {"plain": 0.3, "framed": 0.6, "careful": 0.9}}
"""Far apart, and far from the models' own `accuracy` (0.05), so a server that ignored a variant, mistook one for
another or read none could not pass."""
Z = 4.0
"""Standard errors of tolerance: a correct server fails a check with probability about 6e-5."""


def _models(url: str) -> list[dict[str, Any]]:
    return [{"key": key, "provider": provider, "model": key, "base_url": f"{url}/v1" if provider == "openai" else url,
             "sim": {**FAST_SIM, "accuracy": 0.05, "prompt_accuracy": ACCURACY[key]}}
            for key, provider in (("oa", "openai"), ("an", "anthropic"))]


def _project(url: str) -> dict[str, Any]:
    return {"project": {"name": "mock-prompt-accuracy"},
            "defaults": {"max_tokens": 32, "system": "Answer with the answer only."},
            "run": {"concurrency": 16, "timeout_s": 10.0, "trials": TRIALS, "seed": 11},
            "prompts": PROMPTS, "models": _models(url), "cases": CASES}


def test_each_variant_is_answered_with_its_configured_accuracy(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    server = tmp_path / "server.toml"
    server.write_text(tomli_w.dumps(_project("http://127.0.0.1:1")), encoding="utf-8")
    proc, m, lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                   str(server)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        project = tmp_path / "arena.toml"
        project.write_text(tomli_w.dumps(_project(m.group(1))), encoding="utf-8")
        db = tmp_path / "r.db"
        code = main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report"])
    finally:
        stop_server(proc)
    assert code == 0, capsys.readouterr().err + "".join(lines)[-2000:]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT model_key, variant, COUNT(*), SUM(passed), SUM(status = 'errored') FROM results "
                            "GROUP BY model_key, variant").fetchall()
    n = len(CASES) * TRIALS
    assert len(rows) == 6 and all(count == n and errored == 0 for _m, _v, count, _p, errored in rows), rows
    for model, variant, _count, passed, _errored in rows:
        p = ACCURACY[model][variant]
        tolerance = Z * math.sqrt(p * (1 - p) / n)
        assert abs(passed / n - p) <= tolerance, (model, variant, passed / n, p, tolerance)

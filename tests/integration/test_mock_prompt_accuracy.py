"""The bundled mock server answers each prompt variant with its own accuracy (sim.prompt_accuracy), end to end: an
`arena mock-server` on 127.0.0.1 serving an OpenAI and an Anthropic model, `arena evaluate` sweeping them under three
variants (a template, a system prompt alone, the case as written), and each model × variant pass rate within a
binomial tolerance of its configured accuracy; a repair turn is the same case asked again, answered afresh with the
variant's accuracy. The server is told nothing but the prompts themselves."""

from __future__ import annotations

import math
import sqlite3
import sys
from collections.abc import Callable
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


def _evaluate(tmp_path: Path, doc: Callable[[str], dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> Path:
    """`arena evaluate` of project `doc(url)` against an `arena mock-server` serving the same project; the database."""
    server = tmp_path / "server.toml"
    server.write_text(tomli_w.dumps(doc("http://127.0.0.1:1")), encoding="utf-8")
    proc, m, lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                   str(server)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        project = tmp_path / "arena.toml"
        project.write_text(tomli_w.dumps(doc(m.group(1))), encoding="utf-8")
        db = tmp_path / "r.db"
        code = main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report"])
    finally:
        stop_server(proc)
    assert code == 0, capsys.readouterr().err + "".join(lines)[-2000:]
    return db


def _within(observed: int, n: int, p: float) -> bool:
    return abs(observed / n - p) <= Z * math.sqrt(p * (1 - p) / n)


def test_each_variant_is_answered_with_its_configured_accuracy(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = _evaluate(tmp_path, _project, capsys)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT model_key, variant, COUNT(*), SUM(passed), SUM(status = 'errored') FROM results "
                            "GROUP BY model_key, variant").fetchall()
    n = len(CASES) * TRIALS
    assert len(rows) == 6 and all(count == n and errored == 0 for _m, _v, count, _p, errored in rows), rows
    for model, variant, _count, passed, _errored in rows:
        assert _within(passed, n, ACCURACY[model][variant]), (model, variant, passed / n, ACCURACY[model][variant])


def test_a_repair_turn_is_answered_afresh_with_its_variants_accuracy(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def doc(url: str) -> dict[str, Any]:
        d = _project(url)
        d["prompts"] = PROMPTS[:2]
        oa = d["models"][0]  # plain 0.9, framed 0.6
        d["models"] = [{**oa, "sim": {**oa["sim"], "prompt_accuracy": {v["name"]: ACCURACY["oa"][v["name"]]
                                                                        for v in PROMPTS[:2]}}}]
        d["run"]["repair"] = {"attempts": 1, "on": ["wrong_answer"], "message": "No: {error}. Try again."}
        return d

    db = _evaluate(tmp_path, doc, capsys)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT variant, COUNT(*), SUM(repairs = 0 AND passed), SUM(passed), SUM(repairs) "
                            "FROM results GROUP BY variant").fetchall()
    n = len(CASES) * TRIALS
    assert len(rows) == 2, rows
    for variant, count, first, after, repairs in rows:
        p = ACCURACY["oa"][variant]
        assert count == n and repairs == n - first  # every wrong first answer was repaired once
        assert _within(first, n, p), (variant, first / n, p)
        # the repair is the case asked again: right with the variant's accuracy, so 1 - (1 - p)^2 pass after it
        assert _within(after, n, 1 - (1 - p) ** 2), (variant, after / n, 1 - (1 - p) ** 2)

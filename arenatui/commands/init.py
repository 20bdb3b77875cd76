"""`arena init`: write a commented starter project (TOML via tomli-w) and a small JSONL case file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w

from arenatui.kernel.errors import ArenaError

_SECTIONS: list[tuple[str, str, Any]] = [
    ("project", "What this project is called (shown in the console and stored with every run).",
     {"name": "my-eval"}),
    ("defaults", "Request settings every model inherits unless it overrides them.",
     {"max_tokens": 256, "temperature": 0.0, "system": "Answer with the answer only."}),
    ("run", "How the sweep runs. `concurrency` is where you start: change it live with +/- in `arena run`.\n"
            "timeout_s bounds one attempt; retries use exponential backoff with full jitter and honour\n"
            "the provider's retry-after.",
     {"concurrency": 8, "timeout_s": 120.0, "max_attempts": 5, "backoff_base_s": 0.5, "backoff_cap_s": 30.0,
      "trials": 1, "seed": 0}),
]

_MODELS = """\
# Models. provider = "sim" runs offline; "openai" speaks the OpenAI-compatible API (OpenAI, vLLM,
# Ollama at http://localhost:11434/v1, llama.cpp, LM Studio, gateways); "anthropic" the Messages API.
# API keys are read from the environment variable NAMED by api_key_env, never written here.
"""

_MODELS_DATA = {"models": [
    {"key": "sim-fast", "provider": "sim", "model": "sim-fast", "price_in_per_mtok": 0.15,
     "price_out_per_mtok": 0.6,
     "sim": {"base_latency_s": 0.05, "per_token_s": 0.001, "accuracy": 0.7,
             "strata_accuracy": {"hard": 0.4}}},
    {"key": "sim-limited", "provider": "sim", "model": "sim-limited", "price_in_per_mtok": 2.5,
     "price_out_per_mtok": 10.0,
     "sim": {"base_latency_s": 0.2, "per_token_s": 0.002, "accuracy": 0.9, "rpm": 600, "max_concurrent": 6}},
]}

_OPENAI_EXAMPLE = """
# [[models]]
# key = "gpt-4o-mini"
# provider = "openai"
# model = "gpt-4o-mini"
# api_key_env = "OPENAI_API_KEY"
# price_in_per_mtok = 0.15
# price_out_per_mtok = 0.6
# max_concurrency = 16      # client-side cap for this model
# rpm = 500                 # client-side requests per minute
# Extra headers: values in `headers` are sent but stored with a run only as [redacted] (resume reads
# them again from this file); credential headers belong in headers_env, which names the environment
# variable holding each value, like api_key_env:
# headers_env = { "X-Goog-Api-Key" = "GOOGLE_API_KEY", "Cookie" = "GATEWAY_COOKIE" }
"""

_SCORERS = """
# Scorers: exact, contains, regex (pattern, may use {expected}), choice (label extraction),
# numeric (tolerance), json_valid, json_schema (schema or schema_file), f1 (labels), python (your own
# function) and code_exec (runs the answer's code with the case's `tests`; needs [run] allow_code_exec =
# true). A case may name one with `scorer = "name"`; the first is the default. Your own scorer, in a file
# my_scorers.py beside this one:
#     def grade(case, output):                 # case.expected, case.input, case.tags ...
#         return output.strip().lower() == (case.expected or "").lower()   # bool, a float in [0, 1], or Score
# and here:
#     [[scorers]]
#     name = "mine"
#     kind = "python"
#     function = "my_scorers:grade"
# A model as the judge of open-ended answers (the judge model only judges unless it sets candidate = true):
#     [[scorers]]
#     name = "judged"
#     kind = "llm_judge"
#     judge = "grader"                         # a [[models]] key
#     rubric = "Question: {input}\\nReference: {expected}\\nAnswer: {output}\\nEnd with 'VERDICT: N' (1-5)."
#     scale = "1-5"                            # or "pass/fail"; passes from pass_at (default 4 on 1-5)
#     sample = 0.2                             # judge a fixed fifth of its cases (or a count: sample = 50)
"""
_SCORERS_DATA = {"scorers": [{"name": "exact", "kind": "exact"}, {"name": "choice", "kind": "choice"},
                             {"name": "numeric", "kind": "numeric", "tolerance": 0.01}]}

_CASES = """
# Cases inline ([[cases]]) or from JSONL/CSV files: id, input (string or chat messages), expected,
# tags, stratum, sealed (held out: never shown or exported), scorer.
cases_file = "cases.jsonl"
"""

_CASE_ROWS = [
    {"id": "capital-fr", "input": "What is the capital of France?", "expected": "Paris", "stratum": "easy",
     "tags": ["trivia"]},
    {"id": "add-1", "input": "What is 17 + 25?", "expected": "42", "stratum": "easy", "tags": ["math"],
     "scorer": "numeric"},
    {"id": "mc-1", "input": "Which is a prime? A) 21 B) 27 C) 29 D) 33", "expected": "C", "stratum": "medium",
     "tags": ["math"], "scorer": "choice"},
    {"id": "mult-1", "input": "What is 123 * 47?", "expected": "5781", "stratum": "hard", "tags": ["math"],
     "scorer": "numeric"},
]


def write_starter(directory: Path, *, force: bool = False) -> list[Path]:
    """Write arena.toml and cases.jsonl into `directory`; every refusal is an ArenaError naming the path."""
    if directory.exists() and not directory.is_dir():
        raise ArenaError(f"{directory} is a file, not a directory: `arena init DIR` writes arena.toml and "
                         "cases.jsonl into DIR; choose a directory (new or existing)")
    toml_path = directory / "arena.toml"
    cases_path = directory / "cases.jsonl"
    for p in (toml_path, cases_path):
        if p.exists() and not force:
            raise ArenaError(f"{p} already exists; pass --force to overwrite it or choose another directory")
        if p.is_dir():
            raise ArenaError(f"{p} is a directory; choose another directory to write the project into")
    try:
        _write(directory, toml_path, cases_path)
    except OSError as e:  # read-only file system, no permission, a path component that is a file, disk full
        where = e.filename or directory
        raise ArenaError(f"cannot write the starter project into {directory}: {where}: {e.strerror or e}. "
                         "Choose a directory you can write to") from None
    return [toml_path, cases_path]


def _write(directory: Path, toml_path: Path, cases_path: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # Top-level keys first: tomli-w may write `scorers` as an inline array (a bare key), which after a
    # table header such as [models.sim] would belong to that table instead.
    parts = ["# arenatui project. Run it with:  arena run --project " + str(directory) + "\n", _CASES,
             _SCORERS + tomli_w.dumps(_SCORERS_DATA)]
    for name, comment, data in _SECTIONS:
        parts.append("\n" + "".join(f"# {line}\n" for line in comment.splitlines()))
        parts.append(tomli_w.dumps({name: data}))
    parts.append("\n" + _MODELS + tomli_w.dumps(_MODELS_DATA))
    parts.append(_OPENAI_EXAMPLE)
    toml_path.write_text("".join(parts), encoding="utf-8")
    cases_path.write_text("".join(json.dumps(r) + "\n" for r in _CASE_ROWS), encoding="utf-8")

"""Issue 32's measurements against llama-cpp-python's real server: `arena evaluate` at concurrency 1 and 4, and
`arena tune --write`, as a user runs them, and what arenatui stored.

    python benchmarks/llamacpp_server.py [--budgets 400,60] [--trials 1] [--max-tokens 8]

Needs `bash scripts/install_servers.sh` (the server and the model, under $ARENATUI_SERVERS). It starts
`python -m llama_cpp.server` (default settings, one thread: one answer at a time, and a new request interrupts a
stream in progress) on a free 127.0.0.1 port, writes an eight-case project to a temporary folder and runs the `arena`
commands of this checkout against it. Figures, one JSON line each:

- per concurrency level: answered calls, the model's quality over them (passed / answered), answers stored with an
  empty output (an interrupted stream read as an answer), calls errored `incomplete_stream`, retries, the streams
  the server interrupted (its log; each should be a failed attempt, `incomplete_stream`), wall time;
- per tune budget: the concurrency `arena tune --write` wrote (none when it gave no verdict), its verdict line, and
  the share of the tune run's answered calls that were empty;
- for each, whether it said what to change on a server with one slot ("set stream = false or max_concurrency = 1").

The cases are tests/integration/data/gemma270m_echo.jsonl: copy and continue tasks the base model answers (it
repeats its prompt), and one question it does not.

The target (issue 32, "How it is measured"): at concurrency 4 no empty answer is stored (each interrupted stream is
`incomplete_stream` and retried) and the quality equals concurrency 1's within its interval; `tune --write` writes
1 or 2 and counts complete answers only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tomli_w

SERVERS = Path(os.environ.get("ARENATUI_SERVERS") or Path.home() / ".cache" / "arenatui" / "servers")
LLAMA_PY = SERVERS / "llama" / "bin" / "python"
MODEL = SERVERS / "models" / "gemma-3-270m-q4_k_m.gguf"
ALIAS = "gemma-3-270m"
CASES = Path(__file__).resolve().parents[1] / "tests" / "integration" / "data" / "gemma270m_echo.jsonl"
"""Cases the base model answers (it repeats its prompt: copy and continue tasks) and one it does not: a quality
neither 0 nor 1 (the conformance tier's case file)."""
ADVICE = "the server interrupts a stream when another request arrives"


def emit(name: str, value: Any, unit: str = "", **extra: Any) -> None:
    print(json.dumps({"name": name, "value": value, "unit": unit, **extra}), flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([str(LLAMA_PY), "-m", "llama_cpp.server", "--model", str(MODEL), "--model_alias", ALIAS,
                             "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "1024",
                             "--chat_format", "gemma"],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            # unbuffered: its "Disconnected" lines are counted as they happen
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if b"Uvicorn running" in log.read_bytes():
            return proc, f"http://127.0.0.1:{port}"
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    sys.exit(f"llama_cpp.server did not start; its log:\n{log.read_text(errors='replace')[-2000:]}")


def write_project(path: Path, base: str, trials: int, max_tokens: int) -> Path:
    path.write_text(tomli_w.dumps({
        "project": {"name": "llamacpp"},
        "defaults": {"max_tokens": max_tokens, "system": "Answer in a few words."},
        "run": {"concurrency": 4, "timeout_s": 120.0, "trials": trials, "seed": 1},
        "models": [{"key": "gemma", "provider": "openai", "model": ALIAS, "base_url": f"{base}/v1", "stream": True}],
        "scorers": [{"name": "contains", "kind": "contains"}],
        "cases_file": str(CASES),
    }), encoding="utf-8")
    return path


def interruptions(log: Path) -> int:
    """Streams the server has interrupted so far: it logs each one."""
    return sum("Disconnected from client (via refresh/close)" in line and "before llm invoked" not in line
               for line in log.read_text(errors="replace").splitlines())


def arena(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *argv], capture_output=True, text=True, timeout=3600)


def stored(db: Path, run_id: str | None = None) -> dict[str, Any]:
    with sqlite3.connect(db) as c:
        if run_id is None:
            (run_id,) = c.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        rows = c.execute("SELECT status, error_class, output, attempts FROM results WHERE run_id = ?",
                         (run_id,)).fetchall()
        fails = dict(c.execute("SELECT error_class, COUNT(*) FROM failed_attempts WHERE run_id = ? "
                               "GROUP BY error_class", (run_id,)).fetchall())
    answered = [r for r in rows if r[1] is None]
    passed = sum(1 for r in answered if r[0] == "passed")
    return {"run_id": run_id, "calls": len(rows), "answered": len(answered), "passed": passed,
            "quality": passed / len(answered) if answered else None,
            "empty_answers": sum(1 for r in answered if not (r[2] or "").strip()),
            "incomplete_stream": sum(1 for r in rows if r[1] == "incomplete_stream"),
            "retries": sum(r[3] for r in rows) - len(rows), "failed_attempts": fails}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", default="400,60", help="arena tune --budget values to run (comma-separated)")
    ap.add_argument("--trials", type=int, default=1, help="trials per case in the evaluate runs")
    ap.add_argument("--max-tokens", type=int, default=8,
                    help="max_tokens per answer (the base model rambles to the limit: this sets a call's length)")
    ap.add_argument("--levels", default="1,4", help="evaluate concurrency levels (comma-separated)")
    args = ap.parse_args()
    if not (LLAMA_PY.exists() and MODEL.exists()):
        sys.exit(f"llama-cpp-python's server or the model is missing under {SERVERS}: "
                 "run `bash scripts/install_servers.sh`")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        proc, base = start_llama(d / "llama.log")
        try:
            for level in [int(x) for x in args.levels.split(",")]:
                project = write_project(d / f"c{level}.toml", base, args.trials, args.max_tokens)
                db = d / f"c{level}.db"
                t0, before = time.monotonic(), interruptions(d / "llama.log")
                done = arena("evaluate", "--project", str(project), "--db", str(db), "--concurrency", str(level),
                             "--quiet", "--no-report")
                wall = time.monotonic() - t0
                if done.returncode not in (0, 1):
                    sys.exit(f"arena evaluate failed ({done.returncode}): {done.stderr[-2000:]}")
                s = stored(db)
                for k in ("answered", "quality", "empty_answers", "incomplete_stream", "retries"):
                    emit(f"evaluate_c{level}_{k}", s[k], "calls" if k != "quality" else "share",
                         calls=s["calls"], passed=s["passed"])
                emit(f"evaluate_c{level}_interrupted_by_server", interruptions(d / "llama.log") - before, "streams",
                     failed_attempts=s["failed_attempts"])
                emit(f"evaluate_c{level}_wall_s", round(wall, 1), "s")
                emit(f"evaluate_c{level}_single_slot_advice", ADVICE in " ".join(done.stderr.split()), "said")
            for budget in [int(x) for x in args.budgets.split(",")]:
                project = write_project(d / f"tune{budget}.toml", base, 1, args.max_tokens)
                db = d / f"tune{budget}.db"
                t0, before = time.monotonic(), interruptions(d / "llama.log")
                done = arena("tune", "--project", str(project), "--db", str(db), "--budget", str(budget),
                             "--write", "concurrency")
                wall = time.monotonic() - t0
                text = re.sub(r"\s+", " ", done.stdout)
                m = re.search(r"max_concurrency\s*=\s*(\d+)", project.read_text(encoding="utf-8"))
                # the verdict line, up to the readout table (box-drawing characters) or the sentence's end
                verdict = re.search(r"(optimum|not enough evidence|still rising|capped at|limited by)"
                                    r"[^.;\u2500-\u257f]*", text)
                s = stored(db)
                emit(f"tune_b{budget}_written_max_concurrency", int(m.group(1)) if m else None, "level",
                     verdict=verdict.group(0).strip() if verdict else None, exit_code=done.returncode)
                emit(f"tune_b{budget}_empty_answer_share",
                     round(s["empty_answers"] / s["answered"], 3) if s["answered"] else None, "share",
                     answered=s["answered"], empty=s["empty_answers"], calls=s["calls"],
                     incomplete_stream=s["incomplete_stream"], wall_s=round(wall, 1),
                     interrupted_by_server=interruptions(d / "llama.log") - before)
                emit(f"tune_b{budget}_single_slot_advice", ADVICE in text, "said")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()

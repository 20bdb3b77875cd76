"""Every example under examples/ runs offline as its README says, and does what it claims."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from httpkit import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _db(home: Path) -> Path:
    return home / "data" / "arena.db"


def test_the_retrieval_pipeline_calls_the_mock_server_and_beats_no_retrieval(tmp_path: Path, arena_home: Path
                                                                             ) -> None:
    proc, m, _lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                    str(EXAMPLES / "retrieval" / "arena.toml")], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        out = subprocess.run([sys.executable, str(EXAMPLES / "retrieval" / "run.py"), str(tmp_path / "report.md")],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path,
                             env=_env(ARENA_MOCK_URL=f"{m.group(1)}/v1"))
    finally:
        stop_server(proc)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^rag: score \d\.\d\d over 5 cases", out.stdout, re.M)
    assert "report: " in out.stdout and (tmp_path / "report.md").read_text().startswith("#")
    with sqlite3.connect(_db(arena_home)) as conn:
        rows = conn.execute("SELECT model_key, COUNT(*), SUM(status = 'errored'), MAX(tokens_estimated) "
                            "FROM results GROUP BY model_key ORDER BY model_key").fetchall()
        rag = conn.execute("SELECT AVG(passed) FROM results WHERE model_key = 'rag'").fetchone()[0]
    # every call answered by the server, its usage counted (never estimated): the HTTP path really ran
    assert rows == [("plain", 15, 0, 0), ("rag", 15, 0, 0)]
    assert rag > 0.6  # the server answers rag's calls right 95% of the time


def test_the_stateful_process_solver_runs_in_worker_processes(tmp_path: Path, arena_home: Path) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLES / "stateful" / "run.py"), str(tmp_path / "r.html")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("average score 1.00, pass@2 1.00")
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")
    with sqlite3.connect(_db(arena_home)) as conn:
        outputs = [o for (o,) in conn.execute("SELECT output FROM results")]
    pids = {int(re.match(r"worker (\d+)", o).group(1)) for o in outputs}  # type: ignore[union-attr]
    assert len(outputs) == 8 and os.getpid() not in pids and 1 <= len(pids) <= 2  # the pool of 2
    # one trial at a time per worker: a trial's history never holds another trial's questions
    assert all(re.search(r"\d+ cached, 1 asked in this trial", o) for o in outputs)


def test_the_chained_case_set_runs_from_the_cli(tmp_path: Path, arena_home: Path) -> None:
    db = tmp_path / "r.db"
    out = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--project", str(EXAMPLES / "chained"),
                          "--db", str(db), "--quiet"], capture_output=True, text=True, timeout=120, env=_env())
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(db) as conn:
        broken = conn.execute("SELECT model_key, trial FROM results WHERE case_id = 'extract' AND status != 'passed'"
                              ).fetchall()
        for mk, trial in broken:  # every broken episode left its dependents unreachable, never failed
            assert {s for (s,) in conn.execute("SELECT status FROM results WHERE model_key = ? AND trial = ? AND "
                                               "case_id IN ('summary', 'keywords', 'title')", (mk, trial))
                    } == {"unreachable"}
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (40,)
    assert broken  # seed 3: the sloppy model breaks some chains


def test_the_stateful_example_leaves_nothing_in_the_directory_it_runs_from(tmp_path: Path, arena_home: Path) -> None:
    """Issue 37 item 15: without an argument the examples wrote report.md / report.html into the checkout."""
    here = tmp_path / "checkout"
    here.mkdir()
    out = subprocess.run([sys.executable, str(EXAMPLES / "stateful" / "run.py")], capture_output=True, text=True,
                         timeout=120, cwd=here, env=_env())
    assert out.returncode == 0, out.stderr
    written = Path(re.search(r"^report: (.+)$", out.stdout, re.M).group(1))  # type: ignore[union-attr]
    assert written.is_file() and not list(here.iterdir())


def test_the_kubernetes_run_script_works_from_any_directory(tmp_path: Path) -> None:
    """Issue 37 item 15: examples/kubernetes/run.sh read its manifests relative to the caller's directory. Run from
    elsewhere with stand-in kubectl and envsubst (which need the files beside them), it goes through."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in *.yaml|*.toml|*.jsonl) test -f "${a#--from-file=}" || exit 3;; esac; done\n'
        'case "$1" in get) echo Complete;; create) echo "kind: ConfigMap";; esac\n', encoding="utf-8")
    (bin_dir / "envsubst").write_text("#!/bin/sh\ncat\n", encoding="utf-8")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = subprocess.run(["sh", str(EXAMPLES / "kubernetes" / "run.sh")], cwd=elsewhere, capture_output=True,
                       text=True, timeout=60, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert p.returncode == 0, p.stderr

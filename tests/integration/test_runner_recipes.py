"""The runner recipes in examples/ run as written: the Slurm array task and merge scripts, and the Kubernetes Indexed
Job's and merge Job's container scripts, each executed here by local processes standing in for the machines (the
runner's variables set as the runner sets them), then the merged database checked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from arenatui.store import Store
from arenatui.store.run_shards import run_shards

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
N = 3
ARENA = f"{sys.executable} -m arenatui"


def _project(tmp_path: Path) -> Path:
    sim = {"base_latency_s": 0.001, "per_token_s": 0.0, "jitter": 0.0}
    raw = {"project": {"name": "recipe"}, "run": {"seed": 3, "trials": 2, "concurrency": 4},
           "models": [{"key": "served", "provider": "sim", "sim": {**sim, "accuracy": 0.6}}],
           "cases": [{"id": f"q{i}", "input": f"{i}?", "expected": str(i)} for i in range(8)]}
    p = tmp_path / "arena.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "ARENATUI_HOME": str(home), "ARENA": ARENA, **extra}


def _all(cmds: list[tuple[list[str], dict[str, str]]]) -> None:
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for argv, env in cmds]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"{out}\n{err}"


def test_the_slurm_array_and_its_dependent_merge(tmp_path: Path, arena_home: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    slurm = EXAMPLES / "slurm"
    for script in ("shard.sbatch", "merge.sbatch", "submit.sh"):
        assert subprocess.run(["bash", "-n", str(slurm / script)]).returncode == 0
    proj = _project(tmp_path)
    common = {"SLURM_SUBMIT_DIR": str(tmp_path), "SLURM_ARRAY_JOB_ID": "4242", "SLURM_ARRAY_TASK_COUNT": str(N),
              "PROJECT": str(proj)}
    tasks = []
    for k in range(N):
        scratch = tmp_path / f"node{k}"
        scratch.mkdir()
        tasks.append((["bash", str(slurm / "shard.sbatch")],
                      _env(arena_home, **common, SLURM_ARRAY_TASK_ID=str(k), TMPDIR=str(scratch))))
    _all(tasks)
    assert sorted(p.name for p in (tmp_path / "shards").glob("*.db")) == [f"shard-{k}.db" for k in range(N)]
    _all([(["bash", str(slurm / "merge.sbatch")], _env(arena_home, **common, RUN_ID="sweep-4242"))])
    with Store(tmp_path / "merged.db") as store:
        rec = store.get_run("sweep-4242")
        assert rec.status == "finished" and store.count_results("sweep-4242") == rec.planned == 16
        assert [(s.shard, s.shards) for s in run_shards(store, "sweep-4242")] == [(k, N) for k in range(N)]
    assert "sweep-4242" in (tmp_path / "merged-report.md").read_text(encoding="utf-8")


def _container(doc: dict[str, Any]) -> tuple[str, dict[str, str]]:
    c = doc["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["sh", "-c"]
    return c["args"][0], {e["name"]: str(e["value"]) for e in c["env"]}


def test_the_kubernetes_indexed_job_barrier_and_merge_job(tmp_path: Path, arena_home: Path) -> None:
    yaml = pytest.importorskip("yaml")  # a dev dependency (pyproject.toml): YAML is how the Jobs are written
    k8s = EXAMPLES / "kubernetes"
    base = time.time() + 3.0

    def manifest(name: str) -> dict[str, Any]:  # as run.sh applies it: envsubst '$RUN_ID $START_BASE'
        text = (k8s / name).read_text(encoding="utf-8")
        doc = yaml.safe_load(text.replace("${RUN_ID}", "load-7").replace("${START_BASE}", f"{base:.6f}"))
        assert isinstance(doc, dict)
        return doc

    assert subprocess.run(["sh", "-n", str(k8s / "run.sh")]).returncode == 0
    job = manifest("shards-job.yaml")
    spec = job["spec"]
    script, env = _container(job)
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(env["SHARDS"])  # every shard at once
    assert env["RUN_ID"] == "load-7" and float(env["ARENA_START_BASE"]) == pytest.approx(base)
    mounts = {m["mountPath"] for m in job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert {env["DATA_DIR"], env["SCRATCH"], os.path.dirname(env["PROJECT"])} <= mounts
    assert yaml.safe_load((k8s / "pvc.yaml").read_text())["spec"]["accessModes"] == ["ReadWriteMany"]

    data = tmp_path / "pvc"
    data.mkdir()
    pods = []
    for k in range(N):  # N pods stand in for the Job's (a smaller N than the manifest's: a 2-core test machine)
        scratch = tmp_path / f"pod{k}"
        scratch.mkdir()
        pods.append((["sh", "-c", script], _env(arena_home, **{
            **env, "ARENA": ARENA, "PROJECT": str(_project(tmp_path)), "SHARDS": str(N), "START_IN": "0.5s",
            "LOAD_ARGS": "--model served --rate 60 --duration 1s --arrival poisson --seed 7",
            "DATA_DIR": str(data), "SCRATCH": str(scratch), "JOB_COMPLETION_INDEX": str(k)})))
    _all(pods)

    merge_script, merge_env = _container(manifest("merge-job.yaml"))
    _all([(["sh", "-c", merge_script], _env(arena_home, **{**merge_env, "ARENA": ARENA, "DATA_DIR": str(data)}))])
    with Store(data / "merged.db") as store:
        rec = store.get_run("load-7")
        assert rec.status == "finished"
        shards = run_shards(store, "load-7")
        (sent,) = store.conn.execute("SELECT COUNT(*) FROM load_requests WHERE run_id = 'load-7'").fetchone()
    assert [s.shard for s in shards] == list(range(N)) and sent > 30
    assert all(s.planned_start == pytest.approx(base + 0.5) for s in shards)  # one barrier for every pod
    assert "Load report" in (data / "load-7-report.md").read_text(encoding="utf-8")

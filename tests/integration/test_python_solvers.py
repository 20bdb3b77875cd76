"""Python solvers under the engine: one factory call per trial, overlap as declared (thread, process, serial),
errors as the engine's classes, the shared-instance fail-fast, and the entry points bench() / abench()."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import arenatui
from arenatui.kernel.errors import ConfigError, SolverMisuse


def _cases(n: int, expected: str = "ok") -> tuple[arenatui.Case, ...]:
    return tuple(arenatui.Case(id=f"c{i}", input=f"question {i}", expected=expected) for i in range(n))


def _project(tmp_path: Path, solver: Any, *, cases: int = 3, trials: int = 2, concurrency: int = 4,
             mode: str = "thread", **run: Any) -> arenatui.Project:
    return arenatui.Project(
        name="solvers", path=tmp_path / "arena.toml",
        models=(arenatui.Model(key="mine", solver=solver, concurrency=mode),),
        cases=_cases(cases), run=arenatui.RunSettings(trials=trials, concurrency=concurrency, backoff_base_s=0.01,
                                                     backoff_cap_s=0.05, **run))


def _rows(db: Path, run_id: str, cols: str = "case_id, trial, status, error_class, error_message, score_detail"
          ) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT {cols} FROM results WHERE run_id = ? ORDER BY case_id, trial",
                            (run_id,)).fetchall()


class Overlap:
    """Counts calls in progress (thread-safe: sync solvers run in worker threads) and remembers the most at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


async def held(watched: Overlap, *also: Overlap, until_more_than: int = 1, tries: int = 50) -> None:
    """A call in `watched` (and `also`) that holds until more than `until_more_than` calls are in `watched`, or
    `tries` × 10 ms: overlap shows without a race on timing."""
    for o in (watched, *also):
        o.enter()
    try:
        for _ in range(tries):
            if watched.now > until_more_than:
                break
            await anyio.sleep(0.01)
    finally:
        for o in (watched, *also):
            o.leave()


def test_bench_calls_the_factory_once_per_trial_with_its_context(tmp_path: Path) -> None:
    seen: list[arenatui.TrialContext] = []

    def make(ctx: arenatui.TrialContext) -> Any:
        seen.append(ctx)

        async def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
            assert req.case_id == ctx.case_id and req.trial == ctx.trial_index
            return arenatui.Answer("ok", input_tokens=10, output_tokens=2, cost=0.5)

        return solve

    r = arenatui.bench(_project(tmp_path, make, cases=3, trials=2), db=tmp_path / "r.db", k_values=[1, 2])
    assert r.status == "finished"
    assert sorted((c.case_id, c.trial_index) for c in seen) == [(f"c{i}", t) for i in range(3) for t in range(2)]
    assert {c.run_id for c in seen} == {r.run_id} and {c.model_key for c in seen} == {"mine"}
    assert r.average_score() == 1.0 and r.pass_at() == {1: 1.0, 2: 1.0}
    assert r.leaderboard()[0].spend == pytest.approx(3.0)  # the solver's own cost, 6 calls x 0.5
    assert r.compare("mine", "mine").n == 3
    lines = r.export(tmp_path / "calls.jsonl").read_text().splitlines()
    assert sum('"case_id"' in line for line in lines) == 6
    with sqlite3.connect(r.db) as conn:
        assert conn.execute("SELECT SUM(input_tokens), MIN(tokens_estimated) FROM results").fetchone() == (60, 0)


def test_a_retried_trial_keeps_its_solver_and_waits_the_retry_after(tmp_path: Path) -> None:
    made: list[tuple[str, int]] = []

    class Flaky:
        def __init__(self) -> None:
            self.attempts = 0

        async def __call__(self, req: arenatui.SolverRequest) -> str:
            self.attempts += 1
            if self.attempts == 1:
                raise arenatui.RateLimited(retry_after=0.2)
            if self.attempts == 2:
                raise arenatui.Transient("backend hiccup")
            return "ok"

    def make(ctx: arenatui.TrialContext) -> Flaky:
        made.append((ctx.case_id, ctx.trial_index))
        return Flaky()

    r = arenatui.bench(_project(tmp_path, make, cases=2, trials=1), db=tmp_path / "r.db")
    assert sorted(made) == [("c0", 0), ("c1", 0)]  # the retries reused the trial's solver
    with sqlite3.connect(r.db) as conn:
        assert conn.execute("SELECT DISTINCT output, attempts, status FROM results").fetchall() == [
            ("ok", 3, "passed")]
        waits = conn.execute("SELECT error_class, retry_after_s, delay_s FROM failed_attempts ORDER BY attempt"
                             ).fetchall()
    assert {w[0] for w in waits} == {"rate_limited", "transient"}
    assert all(d >= 0.2 for cls, ra, d in waits if cls == "rate_limited")  # never earlier than it asked
    assert all(ra == 0.2 for cls, ra, _d in waits if cls == "rate_limited")


def test_a_solver_exception_is_that_calls_solver_error_with_its_traceback(tmp_path: Path) -> None:
    def make(ctx: arenatui.TrialContext) -> Any:
        def solve(req: arenatui.SolverRequest) -> str:  # a sync solver: run in a worker thread
            if req.case_id == "c1":
                raise ValueError("no index for\nthis case")
            return "ok"

        return solve

    r = arenatui.bench(_project(tmp_path, make, cases=3, trials=1), db=tmp_path / "r.db")
    rows = {row[0]: row for row in _rows(r.db, r.run_id)}
    assert rows["c0"][2] == rows["c2"][2] == "passed"
    _cid, _t, status, cls, msg, detail = rows["c1"]
    assert (status, cls) == ("errored", "solver_error")
    assert msg == "the solver raised ValueError: no index for"  # one line
    assert "Traceback" in detail and "in solve" in detail and "ValueError: no index for\nthis case" in detail
    with sqlite3.connect(r.db) as conn:  # never retried
        assert conn.execute("SELECT attempts, failure_mode FROM results WHERE case_id = 'c1'").fetchone() == (
            1, "solver_error")


def test_thread_solvers_overlap_and_serial_ones_never_do(tmp_path: Path) -> None:
    def run(mode: str, concurrency: int = 4) -> int:
        o = Overlap()

        def make(ctx: arenatui.TrialContext) -> Any:
            async def solve(req: arenatui.SolverRequest) -> str:
                await held(o)
                return "ok"

            return solve

        arenatui.bench(_project(tmp_path, make, cases=4, trials=2, concurrency=concurrency, mode=mode),
                       db=tmp_path / f"{mode}{concurrency}.db")
        return o.most

    assert run("thread") > 1
    assert run("serial") == 1
    assert run("thread", concurrency=1) == 1  # concurrency 1 is strictly serial


def test_max_concurrency_per_case_bounds_the_trials_of_one_case(tmp_path: Path) -> None:
    per_case: dict[str, Overlap] = {}
    everything = Overlap()

    def make(ctx: arenatui.TrialContext) -> Any:
        o = per_case.setdefault(ctx.case_id, Overlap())

        async def solve(req: arenatui.SolverRequest) -> str:
            await held(everything, o, until_more_than=2, tries=20)
            return "ok"

        return solve

    r = arenatui.bench(_project(tmp_path, make, cases=3, trials=4, concurrency=8, max_concurrency_per_case=1),
                       db=tmp_path / "r.db")
    assert r.status == "finished" and len(_rows(r.db, r.run_id)) == 12
    assert max(o.most for o in per_case.values()) == 1
    assert everything.most > 1  # the limit is per case: different cases still overlap


def test_a_factory_handing_out_one_instance_to_trials_at_once_fails_the_run(tmp_path: Path) -> None:
    class Stateful:
        def __init__(self) -> None:
            self.messages: list[str] = []

        async def __call__(self, req: arenatui.SolverRequest) -> str:
            self.messages.append(req.case_id)
            await anyio.sleep(0.05)
            return "ok"

    shared = Stateful()
    with pytest.raises(SolverMisuse, match="must not share a solver"):
        arenatui.bench(_project(tmp_path, lambda ctx: shared, cases=4, trials=1, concurrency=4),
                       db=tmp_path / "r.db")
    # the instance itself given as solver=, concurrently: refused before anything runs
    with pytest.raises(SolverMisuse, match="one solver instance"):
        arenatui.bench(_project(tmp_path, Stateful(), cases=4, trials=1, concurrency=4), db=tmp_path / "s.db")
    # at concurrency 1 sharing it is fine
    r = arenatui.bench(_project(tmp_path, shared, cases=2, trials=1, concurrency=1), db=tmp_path / "t.db")
    assert r.status == "finished"


def test_bench_inside_a_running_loop_says_to_await_abench(tmp_path: Path) -> None:
    async def inside() -> None:
        arenatui.bench(_project(tmp_path, lambda ctx: None), db=tmp_path / "r.db")

    with pytest.raises(RuntimeError) as e:
        asyncio.run(inside())
    assert str(e.value) == "bench() drives its own event loop; inside one, use: await abench(...)"


def test_abench_runs_inside_the_callers_loop(tmp_path: Path) -> None:
    backend = "asyncio"  # trio 0.22 here is older than anyio 4.16 supports (CancelScope.cancel(reason))
    def make(ctx: arenatui.TrialContext) -> Any:
        async def solve(req: arenatui.SolverRequest) -> str:
            await anyio.lowlevel.checkpoint()
            return "ok"

        return solve

    async def main() -> arenatui.RunResult:
        return await arenatui.abench(_project(tmp_path, make), db=tmp_path / f"{backend}.db", trials=3)

    r = anyio.run(main, backend=backend)
    assert r.status == "finished" and r.pass_at_k(3) == 1.0 and len(_rows(r.db, r.run_id)) == 9


def test_a_python_project_is_validated_like_a_file(tmp_path: Path) -> None:
    bad = arenatui.Project(name="x", path=tmp_path / "arena.toml",
                           models=(arenatui.Model(key="m", solver=lambda ctx: None, concurrency="threads"),),
                           cases=_cases(1))
    with pytest.raises(ConfigError) as e:
        arenatui.bench(bad, db=tmp_path / "r.db")
    assert str(e.value) == (f"{tmp_path / 'arena.toml'}: models[0].concurrency: expected one of thread, process, "
                            "serial, got 'threads'; did you mean 'thread'?")
    assert not (tmp_path / "r.db").exists()  # bad input leaves nothing behind


SOLVER_MODULE = '''
import os, time
import arenatui

CALLS = []  # process-global state: why this solver is declared "process"

def make(ctx):
    def solve(req):
        CALLS.append(req.case_id)
        if req.input == "die":
            os._exit(3)
        start = time.time()
        if req.input in ("one", "two"):  # a barrier: both must be under way at once (so two workers ran together)
            here = os.path.join(os.path.dirname(os.path.abspath(__file__)), req.case_id + ".here")
            open(here, "w").close()
            deadline = time.time() + 60
            while time.time() < deadline and not all(os.path.exists(os.path.join(os.path.dirname(here), c + ".here"))
                                                      for c in "ab"):
                time.sleep(0.01)
        time.sleep(0.3)
        return f"{os.getpid()} {start} {time.time()} {len(CALLS)}"
    return solve
'''


def _toml_project(tmp_path: Path, model: str, cases: list[tuple[str, str]], run: str = "") -> Path:
    (tmp_path / "procsolver.py").write_text(SOLVER_MODULE)
    body = "".join(f'[[cases]]\nid = "{cid}"\ninput = "{text}"\nexpected = "x"\nscorer = "c"\n\n'
                   for cid, text in cases)
    p = tmp_path / "arena.toml"
    p.write_text(f'[project]\nname = "procs"\n\n[run]\nmax_attempts = 1\n{run}\n\n[[models]]\n{model}\n\n'
                 f'[[scorers]]\nname = "c"\nkind = "contains"\n\n{body}')
    return p


def test_process_solvers_run_in_a_pool_and_a_dead_worker_is_replaced(tmp_path: Path) -> None:
    project = _toml_project(
        tmp_path, 'key = "proc"\nprovider = "python"\nfactory = "procsolver:make"\nconcurrency = "process"\n'
                  'processes = 2',
        [("a", "one"), ("b", "two"), ("c", "three"), ("d", "die"), ("e", "five"), ("f", "six")], "concurrency = 6")
    r = arenatui.bench(project, db=tmp_path / "r.db")
    rows = {row[0]: row for row in _rows(r.db, r.run_id, "case_id, trial, status, error_class, error_message, output")}
    assert (rows["d"][3], rows["d"][2]) == ("solver_error", "errored")
    assert "worker process running the solver died (exit code 3)" in rows["d"][4]
    answered = [(float(rows[c][5].split()[1]), float(rows[c][5].split()[2]), int(rows[c][5].split()[0]))
                for c in "abcef"]
    assert all(rows[c][3] is None for c in "abcef")  # the calls after the death were answered (a new worker)
    # never more than 2 at once (the pool), and more than one at some moment: a and b wait for each other, so two
    # workers overlap however slow the machine (no timing assumed)
    moments = sorted([(s, 1) for s, _e, _p in answered] + [(e, -1) for _s, e, _p in answered])
    level = most = 0
    for _t, step in moments:
        level += step
        most = max(most, level)
    assert most == 2
    assert len({p for *_t, p in answered}) >= 2  # in worker processes, not this one


def test_serial_solver_in_toml_and_solver_settings_errors(tmp_path: Path) -> None:
    base = 'key = "s"\nprovider = "python"\nfactory = "procsolver:make"\n'
    with pytest.raises(ConfigError, match=r"models\[0\].factory: .*'nosuch' was not found"):
        arenatui.bench(_toml_project(tmp_path, base.replace("procsolver", "nosuch"), [("a", "x")]),
                       db=tmp_path / "r.db")
    with pytest.raises(ConfigError, match=r"models\[0\].concurrency: is a solver setting.*did you mean "
                                          r"'max_concurrency'"):
        arenatui.bench(_toml_project(tmp_path, 'key = "m"\nconcurrency = "thread"', [("a", "x")]),
                       db=tmp_path / "r.db")
    with pytest.raises(ConfigError, match=r"models\[0\].factory: is required"):
        arenatui.bench(_toml_project(tmp_path, 'key = "m"\nprovider = "python"', [("a", "x")]), db=tmp_path / "r.db")


def test_a_run_made_from_python_resumes_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "resumable.py").write_text(textwrap.dedent('''
        import time

        def make(ctx):
            def solve(req):  # sync: run in a thread, which the timeout abandons (and must not keep python alive)
                if req.case_id == "c3":
                    time.sleep(50)  # times out in the first run
                return "ok"
            return solve
    '''))
    code = textwrap.dedent(f'''
        import sys, arenatui
        sys.path.insert(0, {str(tmp_path)!r})
        import resumable
        p = arenatui.Project(name="py", path=__import__("pathlib").Path({str(tmp_path / "arena.toml")!r}),
            models=(arenatui.Model(key="mine", solver=resumable.make),),
            cases=tuple(arenatui.Case(id=f"c{{i}}", input="q", expected="ok") for i in range(5)),
            run=arenatui.RunSettings(concurrency=1, timeout_s=0.5, max_attempts=1))
        r = arenatui.bench(p, db={str(tmp_path / "r.db")!r})
        print(r.run_id, r.status)
    ''')
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run_id, status = first.stdout.split()
    assert status == "finished"
    with sqlite3.connect(tmp_path / "r.db") as conn:  # the hung call timed out; --retry-errored makes it again
        assert conn.execute("SELECT error_class FROM results WHERE case_id = 'c3'").fetchone() == ("timeout",)
    (tmp_path / "resumable.py").write_text("def make(ctx):\n    return lambda req: 'ok'\n")
    t0 = time.monotonic()
    again = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--resume", run_id, "--retry-errored",
                            "--db", str(tmp_path / "r.db"), "--quiet"], capture_output=True, text=True, timeout=60,
                           cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:"
                                              f"{Path(arenatui.__file__).parent.parent}"})
    assert again.returncode == 0, again.stderr
    assert time.monotonic() - t0 < 60
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall() == [("passed", 5)]


def test_ctrl_c_stops_a_process_pool_and_leaves_no_worker_behind(tmp_path: Path) -> None:
    import os
    import signal

    (tmp_path / "sleepy.py").write_text(textwrap.dedent(f'''
        import os, time
        open(os.path.join({str(tmp_path)!r}, f"worker-{{os.getpid()}}"), "w").close()

        def make(ctx):
            def solve(req):
                if req.case_id != "c0":
                    time.sleep(60)
                return "ok"
            return solve
    '''))
    project = tmp_path / "arena.toml"
    project.write_text('[run]\nconcurrency = 4\n\n[[models]]\nkey = "p"\nprovider = "python"\nfactory = "sleepy:make"\n'
                       'concurrency = "process"\nprocesses = 3\n\n'
                       + "".join(f'[[cases]]\nid = "c{i}"\ninput = "q"\nexpected = "ok"\n\n' for i in range(4)))
    db = tmp_path / "r.db"
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "--project", str(project), "--db", str(db),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # c0 answered, every worker up (the others asleep in their calls)
            if db.exists() and len(list(tmp_path.glob("worker-*"))) == 4:
                with sqlite3.connect(db) as conn:
                    try:
                        if conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]:
                            break
                    except sqlite3.OperationalError:
                        pass
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    pids = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
    assert len(pids) == 4  # the pool of 3, and arena itself (it imports the factory when it reads the project)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with sqlite3.connect(db) as conn:
        assert sorted(conn.execute("SELECT status, IFNULL(error_class, '') FROM results").fetchall()) == [
            ("errored", "cancelled")] * 3 + [("passed", "")]  # the sleeping calls end cancelled: resume makes them


def test_bench_with_console_runs_the_sweep_in_the_live_console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from arenatui.tui.app import ArenaApp

    shown: list[str] = []
    real_run = ArenaApp.run

    def run_headless(app: ArenaApp) -> Any:
        async def watch(pilot: Any) -> None:
            shown.append(type(app.screen).__name__)
            with anyio.fail_after(60):
                for _ in range(1_000_000):  # polling: the console drives the sweep and stays open once it ends
                    if app.sweep.status is not None:
                        break
                    await anyio.sleep(0.05)
            app.exit()

        return real_run(app, headless=True, size=(120, 40), auto_pilot=watch)

    monkeypatch.setattr(ArenaApp, "run", run_headless)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)

    def make(ctx: arenatui.TrialContext) -> Any:
        async def solve(req: arenatui.SolverRequest) -> str:
            await anyio.sleep(0.01)
            return "ok"

        return solve

    r = arenatui.bench(_project(tmp_path, make, cases=3, trials=2), db=tmp_path / "r.db", console=True)
    assert shown == ["RunScreen"] and r.status == "finished" and r.average_score() == 1.0


def test_an_attempt_past_timeout_s_is_a_timeout_and_is_retried_with_the_same_solver(tmp_path: Path) -> None:
    made: list[int] = []

    def make(ctx: arenatui.TrialContext) -> Any:
        made.append(ctx.trial_index)

        async def solve(req: arenatui.SolverRequest) -> str:
            if req.attempt == 1:
                await anyio.sleep(30)  # hangs: the provider's own timeout ends it
            return "ok"

        return solve

    r = arenatui.bench(_project(tmp_path, make, cases=1, trials=2, timeout_s=0.2), db=tmp_path / "r.db")
    assert sorted(made) == [0, 1]  # one solver per trial, its retry included
    with sqlite3.connect(r.db) as conn:
        assert conn.execute("SELECT status, attempts FROM results").fetchall() == [("passed", 2)] * 2
        assert {c for (c,) in conn.execute("SELECT error_class FROM failed_attempts")} == {"timeout"}


def test_a_run_of_a_solver_without_a_name_is_read_by_the_cli_and_resumed_from_python(tmp_path: Path) -> None:
    def make(ctx: arenatui.TrialContext) -> Any:  # nested: no other process can import it
        async def solve(req: arenatui.SolverRequest) -> str:
            return "ok"

        return solve

    project = _project(tmp_path, make, cases=2, trials=1)
    db = tmp_path / "r.db"
    r = arenatui.bench(project, db=db)
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(arenatui.__file__).parent.parent)}
    report = subprocess.run([sys.executable, "-m", "arenatui", "report", r.run_id, "--db", str(db), "--format",
                             "json"], capture_output=True, text=True, timeout=60, env=env)
    assert report.returncode == 0, report.stderr  # reading a run never needs its solver
    assert '"mine"' in report.stdout
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE case_id = 'c1'")
    resume = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--resume", r.run_id, "--db", str(db)],
                            capture_output=True, text=True, timeout=60, env=env)
    assert resume.returncode == 2
    assert "has no name another process can import" in resume.stderr and "Traceback" not in resume.stderr
    again = arenatui.bench(project, db=db, resume=r.run_id)  # from Python, given the project again
    assert again.run_id == r.run_id and len(_rows(db, r.run_id)) == 2


def test_a_solver_can_be_an_llm_judge_and_is_asked_the_rubric(tmp_path: Path) -> None:
    asked: list[str] = []

    def grader(ctx: arenatui.TrialContext) -> Any:
        async def solve(req: arenatui.SolverRequest) -> str:
            asked.append(str(req.input))
            return "PASS" if "Paris" in str(req.input) else "FAIL"

        return solve

    def answerer(ctx: arenatui.TrialContext) -> Any:
        async def solve(req: arenatui.SolverRequest) -> str:
            return "Paris" if req.case_id == "c0" else "Lyon"

        return solve

    project = arenatui.Project(
        name="judged", path=tmp_path / "arena.toml",
        models=(arenatui.Model(key="a", solver=answerer), arenatui.Model(key="g", solver=grader)),
        cases=(arenatui.Case(id="c0", input="capital of France?", expected="Paris"),
               arenatui.Case(id="c1", input="capital of France, again?", expected="Paris")),
        scorers=(arenatui.Scorer(name="j", kind="llm_judge", judge="g",
                                 rubric="Q: {input}\nA: {output}\nPASS or FAIL?"),))
    r = arenatui.bench(project, db=tmp_path / "r.db")
    assert r.models == ("a",) and r.average_score("a") == 0.5
    # the rubric filled in, the answer fenced by its per-call markers (then how to give the verdict)
    fenced = re.compile(r"\[The answer to judge is [^\]]*\]\n<<<ANSWER-(\w+)>>>\n(.*?)\n<<<END-ANSWER-\1>>>", re.S)
    assert [fenced.sub(r"\2", q.split("\n\n")[0]) for q in sorted(asked)] == [
        "Q: capital of France, again?\nA: Lyon\nPASS or FAIL?", "Q: capital of France?\nA: Paris\nPASS or FAIL?"]
    assert all(len(fenced.findall(q)) == 1 for q in asked)


def test_a_solver_that_edits_its_messages_in_place_changes_no_other_models_prompt(tmp_path: Path) -> None:
    """A chat case's message dicts were shared by every model and trial: a solver appending to its own request's
    messages (a common pipeline pattern) changed what every later call received (issue 34 item 12)."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def make(ctx: arenatui.TrialContext) -> Any:
        def solve(req: arenatui.SolverRequest) -> str:
            with lock:
                seen.append((ctx.model_key, req.messages[-1]["content"]))
            for m in req.messages:  # a pipeline rewriting its prompt in place
                m["content"] = "MUTATED " + m["content"]
            if not isinstance(req.input, str):
                for m in req.input:
                    m["content"] = "MUTATED " + m["content"]
            return "ok"
        return solve

    chat = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "original question"})
    project = arenatui.Project(
        name="mutating", path=tmp_path / "arena.toml",
        models=(arenatui.Model(key="a", solver=make), arenatui.Model(key="b", solver=make)),
        cases=(arenatui.Case(id="chat", input=chat, expected="ok"),),
        run=arenatui.RunSettings(trials=3, concurrency=1))
    arenatui.bench(project, db=tmp_path / "r.db")
    assert len(seen) == 6
    assert {text for _key, text in seen} == {"original question"}, seen
    assert chat[1]["content"] == "original question"  # the project's own case is untouched too


ODD_RETURNS = '''
import arenatui

class Shout(str):
    pass

def make(ctx):
    def solve(req):
        if req.input == "sub":
            return Shout("ok")
        return arenatui.Answer(Shout("ok"))
    return solve
'''


def test_a_process_solver_returning_a_str_subclass_is_its_solver_error_naming_the_type(tmp_path: Path) -> None:
    """The worker pickled the subclass and the parent could not unpickle it (its module is loaded under another name
    there): `terminal: ModuleNotFoundError`. Now it is that call's solver_error, naming the type (item 21)."""
    project = _toml_project(
        tmp_path, 'key = "proc"\nprovider = "python"\nfactory = "oddsolver:make"\nconcurrency = "process"\n'
                  'processes = 1', [("a", "sub"), ("b", "answer")])
    (tmp_path / "oddsolver.py").write_text(ODD_RETURNS)
    r = arenatui.bench(project, db=tmp_path / "r.db")
    rows = {row[0]: row for row in _rows(r.db, r.run_id)}
    for case in "ab":
        assert rows[case][3] == "solver_error", rows[case]
        assert "Shout" in rows[case][4] and "str subclass" in rows[case][4], rows[case]

"""python scorers that hang, exit or return no score (issue 20, items 4-6): each is that call's scoring_error,
the sweep goes on, and Ctrl-C ends it at once even while a scorer never returns."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arenatui.cli import main
from arenatui.config import Case, ScorerConfig
from arenatui.scoring import Score, Scorer, ScoringError
from arenatui.scoring.plugin import STUCK_LIMIT, coerce

CASE = Case(id="c", input="Say yes.", expected="yes")


def scorer(tmp_path: Path, body: str, timeout_s: float = 10.0) -> Scorer:
    (tmp_path / "grading.py").write_text("import os, sys, time, threading\n\ndef grade(case, output):\n" + body)
    return Scorer(ScorerConfig(name="mine", kind="python", function="grading:grade", timeout_s=timeout_s), tmp_path)


# --- item 4: a scorer that never returns ---------------------------------------------------------------------------

def test_a_scorer_that_never_returns_is_a_scoring_error_after_its_timeout(tmp_path: Path) -> None:
    s = scorer(tmp_path, "    threading.Event().wait()\n", timeout_s=0.2)
    with pytest.raises(ScoringError, match=r"scorer 'mine': gave no verdict within 0.2s \(its timeout_s\)"):
        s.score("yes", CASE)


def test_hung_calls_are_bounded_then_the_scorer_is_not_called_again(tmp_path: Path) -> None:
    # the function hangs until the test creates `release`, and leaves a file per call in `calls/`
    (tmp_path / "calls").mkdir()
    body = (f"    open(os.path.join({str(tmp_path / 'calls')!r}, str(time.monotonic_ns())), 'w').close()\n"
            f"    while not os.path.exists({str(tmp_path / 'release')!r}):\n"
            "        time.sleep(0.01)\n"
            "    return True\n")
    s = scorer(tmp_path, body, timeout_s=0.05)
    for _ in range(STUCK_LIMIT):
        with pytest.raises(ScoringError, match="gave no verdict"):
            s.score("yes", CASE)
    with pytest.raises(ScoringError, match=f"{STUCK_LIMIT} earlier calls are still running"):
        s.score("yes", CASE)
    assert len(list((tmp_path / "calls").iterdir())) == STUCK_LIMIT  # the last call never reached the function
    (tmp_path / "release").touch()  # they return: the scorer is called again
    deadline = time.monotonic() + 30
    while True:  # the stuck calls end in their own time (a condition, not a sleep of a guessed length)
        try:
            assert s.score("yes", CASE).passed
            break
        except ScoringError as e:
            assert "earlier calls are still running" in str(e) or "gave no verdict" in str(e), e
            assert time.monotonic() < deadline, "the stuck calls never returned"
            time.sleep(0.01)


def test_the_default_timeout_is_ten_seconds(tmp_path: Path) -> None:
    from arenatui.project import load_project

    p = tmp_path / "arena.toml"
    p.write_text('[project]\nname = "p"\n[[models]]\nkey = "m"\nprovider = "sim"\n[[scorers]]\nname = "mine"\n'
                 'kind = "python"\nfunction = "grading:grade"\n[[cases]]\nid = "c"\ninput = "q"\n')
    (tmp_path / "grading.py").write_text("def grade(case, output):\n    return True\n")
    assert load_project(p).scorers[0].timeout_s == 10.0


# --- item 5: anything the function raises ----------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "name"), [
    ("    raise SystemExit(3)\n", "SystemExit"),
    ("    sys.exit(0)\n", "SystemExit"),
    ("    raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    ("    raise GeneratorExit\n", "GeneratorExit"),
    ("    raise ValueError('no')\n", "ValueError"),
])
def test_any_exception_of_the_function_is_that_calls_scoring_error(tmp_path: Path, body: str, name: str) -> None:
    with pytest.raises(ScoringError, match=f"scorer 'mine': raised {name}"):
        scorer(tmp_path, body).score("yes", CASE)


def test_a_module_that_exits_on_import_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "grading.py").write_text("raise SystemExit(3)\n")
    s = Scorer(ScorerConfig(name="mine", kind="python", function="grading:grade"), tmp_path)
    with pytest.raises(ScoringError, match="failed to import: SystemExit: 3"):
        s.score("yes", CASE)


# --- item 6: values that are no score ------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "named"), [
    ((1e308, True), "1e+308"),
    ((-5.0, False), "-5.0"),
    ((math.nan, False), "nan"),
    ((math.inf, True), "inf"),
    (1.5, "1.5"),
    (-0.1, "-0.1"),
    (math.nan, "nan"),
    ((0.0, True), "passed with the score 0.0 contradicts itself"),
    ((1.0, False), "failed with the score 1.0 contradicts itself"),
    (Score(0.0, True), "passed with the score 0.0"),
    (("0.5", True), "str, not a number"),
    ((None, False), "NoneType, not a number"),
    ({"score": 1}, "dict"),
])
def test_a_value_that_is_no_score_is_refused_naming_it(value: object, named: str) -> None:
    with pytest.raises(ValueError) as e:
        coerce(value)
    assert named in str(e.value)


def test_scores_in_range_keep_their_pass_and_their_detail() -> None:
    assert coerce(True) == (1.0, True, False, None)
    assert coerce(0.5) == (0.5, False, False, None)
    assert coerce((0.5, True)) == (0.5, True, False, None)
    assert coerce(Score(0.25, False, True, "no JSON")) == (0.25, False, True, "no JSON")


PROJECT = """
[project]
name = "plugins"

[run]
concurrency = 2
seed = 1

[[models]]
key = "m"
provider = "sim"
sim = {{ base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }}

[[scorers]]
name = "mine"
kind = "python"
function = "grading:grade"
timeout_s = {timeout}
""" + "".join(f'\n[[cases]]\nid = "c{i}"\ninput = "Say yes."\nexpected = "yes"\n' for i in range(4))


def _rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT DISTINCT status, error_class, error_message FROM results").fetchall()


@pytest.mark.parametrize(("body", "said"), [
    ("    raise SystemExit(3)\n", "raised SystemExit: 3"),
    ("    raise KeyboardInterrupt('mine')\n", "raised KeyboardInterrupt: mine"),
    ("    return (1e308, True)\n", "the score 1e+308"),
    ("    time.sleep(3600)\n", "gave no verdict within 0.2s"),
])
def test_evaluate_goes_on_and_stores_each_call_as_a_scoring_error(tmp_path: Path, body: str, said: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "grading.py").write_text("import time\n\ndef grade(case, output):\n" + body)
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT.format(timeout=0.2))
    db = tmp_path / "r.db"
    args = ["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--no-report", "--fail-on-error", "1"]
    assert main(args) == 0
    assert "Traceback" not in capsys.readouterr().err
    got = _rows(db)
    assert len(got) == 1 and got[0][:2] == ("errored", "scoring_error") and said in got[0][2]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_ends_a_sweep_at_once_while_a_scorer_never_returns(tmp_path: Path) -> None:
    marker = tmp_path / "scoring"
    (tmp_path / "grading.py").write_text(
        f"import threading\n\ndef grade(case, output):\n    open({str(marker)!r}, 'a').write('x')\n"
        "    threading.Event().wait()\n")
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT.format(timeout=600))
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}
    p = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "-p", str(project), "--db",
                          str(tmp_path / "r.db"), "--quiet", "--no-report"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the scorer was never called"
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGINT)
        # the scorer would hold the process for 600 s (its timeout) and forever after: 60 s means it did not
        err = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "Resume with" in err


# --- issue 34 items 15 and 20: the returned value is read inside the timed call; numpy and Decimal are numbers -----

def test_a_returned_object_whose_conversion_hangs_is_a_scoring_error_after_the_timeout(tmp_path: Path) -> None:
    """Its float(), repr() or len() ran outside the timed thread: an object whose __float__ never returns hung the
    sweep. Now the value is made plain inside the timed call."""
    import threading

    body = ("    class Stuck(float):\n"
            "        def __float__(self):\n"
            "            threading.Event().wait()\n"
            "        def __repr__(self):\n"
            "            threading.Event().wait()\n"
            "    return (Stuck(0.5), True)\n")
    s = scorer(tmp_path, body, timeout_s=0.2)
    box: list[BaseException | None] = []

    def go() -> None:
        try:
            s.score("yes", CASE)
            box.append(None)
        except BaseException as e:
            box.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(60)  # generous: a busy machine; hung for good before the fix
    assert box, "scoring hung past its timeout"
    assert isinstance(box[0], ScoringError) and "gave no verdict within 0.2s" in str(box[0])


@pytest.mark.parametrize(("body", "want"), [
    ("    import numpy as np\n    return np.isclose(1.0, 1.0)\n", (1.0, True)),
    ("    import numpy as np\n    return np.bool_(False)\n", (0.0, False)),
    ("    import numpy as np\n    return np.float32(0.5)\n", (0.5, False)),
    ("    import numpy as np\n    return (np.float64(0.75), np.bool_(True))\n", (0.75, True)),
    ("    from decimal import Decimal\n    return Decimal('0.25')\n", (0.25, False)),
    ("    from fractions import Fraction\n    return Fraction(1, 1)\n", (1.0, True)),
])
def test_numpy_scalars_and_decimals_are_scores(tmp_path: Path, body: str, want: tuple[float, bool]) -> None:
    got = scorer(tmp_path, body).score("yes", CASE)
    assert (got.value, got.passed) == want


def test_a_value_of_another_type_is_named_by_its_real_type(tmp_path: Path) -> None:
    body = "    import numpy as np\n    return np.array([1.0])\n"
    with pytest.raises(ScoringError, match=r"returned numpy\.ndarray; expected a number from 0 to 1"):
        scorer(tmp_path, body).score("yes", CASE)


# --- issue 34 item 18: a module that hangs at import is named, and Ctrl-C ends the wait ---------------------------

@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_scorer_module_that_hangs_at_import_is_named_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    import queue
    import threading

    (tmp_path / "grading.py").write_text("import time\nwhile True:\n    time.sleep(0.05)\n\n"
                                         "def grade(case, output):\n    return True\n")
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT.format(timeout=5))
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}
    p = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "-p", str(project), "--db",
                          str(tmp_path / "r.db"), "--quiet", "--no-report"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    assert p.stderr is not None
    threading.Thread(target=lambda: [lines.put(ln) for ln in p.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any("grading.py" in ln for ln in seen):
            assert time.monotonic() < deadline, f"no line named the module being imported: {seen}"
            try:
                seen.append(lines.get(timeout=0.5))
            except queue.Empty:
                assert p.poll() is None, seen
        os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    time.sleep(0.1)
    while not lines.empty():
        seen.append(lines.get())
    text = "".join(seen)
    assert "still importing" in text and "Ctrl-C" in text, text
    assert p.returncode == 130, text
    assert "Traceback" not in text

"""code_exec against answers that exit early or attack their neighbours and the host (issue 20, items 1-3).

Each attack is a real answer run through the real sandbox. The isolation cases are skipped, saying why, where the
kernel refuses namespaces; the early-exit and daemon cases run everywhere on Linux.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import arenatui.scoring.code_exec as code_exec
from arenatui.config import Case, ScorerConfig
from arenatui.scoring import Scorer
from arenatui.scoring.code_exec import ExecLimits, ExecResult, group_size, run_code, sandbox_report

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")

LIMITS = ExecLimits(timeout_s=30.0, memory_mb=256, max_processes=16, output_kb=16)
"""For code that ends by itself: a timeout no busy machine reaches, so the verdict is never a timeout by accident."""
SHORT = ExecLimits(timeout_s=3.0, memory_mb=256, max_processes=16, output_kb=16)
"""For code that never ends: the timeout is the verdict."""


def ticks() -> float:
    """Now, in the clock ticks since boot that /proc/PID/stat gives a process's start in."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")


def uid_left(uid: int, ended: float) -> int:
    """Processes of a sandbox uid started before `ended`: once the run is over its uid may serve another sandbox
    (another test running at the same time), whose processes start after."""
    n = 0
    for name in os.listdir("/proc"):
        try:
            if not name.isdigit() or os.stat(f"/proc/{name}").st_uid != uid:
                continue
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] not in (b"Z", b"X") and int(fields[19]) <= ended:
            n += 1
    return n


def left_behind(r: ExecResult, ended: float) -> int:
    assert r.process_group is not None
    return group_size(r.process_group) + (uid_left(r.uid, ended) if r.uid is not None else 0)


def run(code: str, tests: str = "", limits: ExecLimits = LIMITS) -> ExecResult:
    r = run_code(code, tests, limits)
    assert r.duration_s < limits.timeout_s + 15  # not a performance check: it says "it did not hang"
    assert left_behind(r, ticks()) == 0  # nothing of it lives on
    return r


def isolated() -> None:
    """Skip the test where the kernel gives no namespaces (saying why)."""
    report = sandbox_report()
    if "pid" not in report.guards or "mount" not in report.guards:
        pytest.skip(f"the kernel refuses namespaces here, so this attack is not contained: {report.describe()}")


@pytest.fixture
def no_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox as it runs where the kernel refuses namespaces."""
    monkeypatch.setattr(code_exec, "_namespaces_work", False)


# --- item 1: the tests must have run ------------------------------------------------------------------------------

ADD_TESTS = "assert add(2, 2) == 4\n"


@pytest.mark.parametrize("answer", [
    "def add(a, b):\n    return a - b\nraise SystemExit(0)\n",
    "import os\ndef add(a, b):\n    return a - b\nos._exit(0)\n",
    "import sys\ndef add(a, b):\n    return a - b\nsys.exit(0)\n",
    "import atexit, os\ndef add(a, b):\n    return a - b\natexit.register(lambda: os._exit(0))\nraise SystemExit\n",
])
def test_an_answer_that_exits_before_its_tests_is_tests_not_run(answer: str) -> None:
    r = run(answer, ADD_TESTS)
    assert r.verdict == "tests_not_run" and not r.passed
    assert r.summary().startswith("tests_not_run: the answer exited")


def test_tests_that_never_pass_are_not_passed_by_an_exit() -> None:
    assert run("import os\nos._exit(0)\n", "assert False\n").verdict == "tests_not_run"


def test_an_honest_main_guard_does_not_skip_the_tests() -> None:
    honest = ("import sys\ndef add(a, b):\n    return a + b\ndef main():\n    print(add(1, 2))\n    return 0\n"
              "if __name__ == '__main__':\n    sys.exit(main())\n")
    assert run(honest, ADD_TESTS).verdict == "passed"
    assert run(honest.replace("a + b", "a - b"), ADD_TESTS).verdict == "failed"
    assert run(honest, "from solution import add as f\nassert f(2, 2) == 4\n").verdict == "passed"


def test_an_exit_inside_the_tests_is_not_a_pass() -> None:
    assert run("def add(a, b):\n    return a + b\n", "import sys\nsys.exit(0)\nassert False\n").verdict == \
        "tests_not_run"


def test_the_nonce_on_its_own_pipe_cannot_be_written_by_a_guess() -> None:
    # the answer writes on every descriptor it has what a completion line looks like, then exits
    forged = ("import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'0' * 32 + b' done \\n')\n"
              "    except OSError:\n        pass\nos._exit(0)\n")
    assert run(forged, ADD_TESTS).verdict == "tests_not_run"
    # garbage on every descriptor (no line end) does not hide a real completion either
    noisy = forged.replace("b' done \\n'", "b'junk'").replace("os._exit(0)", "def add(a, b):\n    return a + b")
    assert "junk" in noisy and "add" in noisy and run(noisy, ADD_TESTS).verdict == "passed"


def test_the_scorer_stores_tests_not_run_as_the_failure_mode() -> None:
    scorer = Scorer(ScorerConfig(name="code", kind="code_exec", timeout_s=30.0))
    sc = scorer.score("def add(a, b):\n    return a - b\nraise SystemExit(0)\n",
                      Case(id="c", input="q", tests=ADD_TESTS))
    assert not sc.passed and sc.failure_mode == "tests_not_run" and sc.detail is not None
    assert sc.detail.startswith("tests_not_run")


# --- issue 34 item 3: the tests run in a process the answer's code never ran in ------------------------------------

WRONG_ADD = "def add(a, b):\n    return a - b\n"
UNITTEST_TESTS = ("import unittest\nclass T(unittest.TestCase):\n    def test_add(self):\n"
                  "        self.assertEqual(add(2, 2), 4)\n"
                  "r = unittest.TextTestRunner().run(unittest.defaultTestLoader.loadTestsFromTestCase(T))\n"
                  "assert r.wasSuccessful()\n")


@pytest.mark.parametrize(("answer", "tests"), [
    (WRONG_ADD + "import builtins\n_c = builtins.compile\n"
     "builtins.compile = lambda s, n, m, *a, **k: _c('pass', n, m)\n", ADD_TESTS),
    (WRONG_ADD + "import builtins, io\nbuiltins.open = lambda *a, **k: io.StringIO('pass')\n", ADD_TESTS),
    (WRONG_ADD + "import builtins\nbuiltins.exec = lambda *a, **k: None\n", ADD_TESTS),
    (WRONG_ADD + "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n", UNITTEST_TESTS),
    (WRONG_ADD + "import sys, types\nsys.modules['math'] = types.SimpleNamespace(isqrt=lambda x: 0)\n",
     "import math\nassert add(2, 2) == math.isqrt(16)\n"),
    (WRONG_ADD.replace("a - b", "Anything()") + "class Anything:\n    def __eq__(self, other):\n        return True\n",
     ADD_TESTS),
    (WRONG_ADD + "import os, sys\nf = sys._getframe(1).f_locals\nf['said']('done')\nos._exit(3)\n", ADD_TESTS),
    (WRONG_ADD + "import os, sys\nf = sys._getframe(1).f_locals\n"
     "os.write(f['fd'], (f['nonce'] + ' done \\n').encode())\nos._exit(0)\n", ADD_TESTS),
], ids=["compile", "open", "exec", "unittest", "sys.modules", "equal-to-everything", "nonce-exit-3", "nonce-exit-0"])
def test_an_answer_cannot_forge_its_tests(answer: str, tests: str) -> None:
    r = run(answer, tests)
    assert r.verdict != "passed", r.stderr
    if "_getframe" not in answer:  # the same attack with add right: the tests still run, on their own, and pass
        assert run(answer.replace("a - b", "a + b").replace("Anything()", "a + b"), tests).verdict == "passed"


def test_the_completion_marker_without_exit_code_zero_is_not_a_pass() -> None:
    # the tests' own process writes its marker, then exits 3: before, the marker alone passed
    r = run("def add(a, b):\n    return a + b\n",
            "import os, sys\nsys._getframe(1).f_locals['said']('done')\nos._exit(3)\n")
    assert r.verdict == "crashed" and r.returncode == 3 and "exited with code 3" in r.stderr


def test_the_answer_cannot_read_its_tests_and_plain_values_cross_as_copies() -> None:
    r = run("import os\nprint('tests visible:', os.path.exists('tests.py'))\n"
            "class Box:\n    def __init__(self):\n        self.items = [1, 2]\n    def __len__(self):\n"
            "        return 2\n    def __iter__(self):\n        return iter(self.items)\n"
            "def add(a, b):\n    return a + b\nbox = Box()\nconst = {'k': (1, 2.5, 'x', b'y', None)}\n",
            ADD_TESTS + "assert const == {'k': (1, 2.5, 'x', b'y', None)}\n"
            "assert len(box) == 2 and list(box) == [1, 2]\n"
            "assert box.items == [1, 2] and box != box.items\nimport solution\nassert solution.add(1, 1) == 2\n"
            "try:\n    add(1, None)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError\n")
    assert r.verdict == "passed", r.stderr
    assert "tests visible: False" in r.stdout


# --- item 2: every process the answer starts ends with it ----------------------------------------------------------

DAEMON = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(600)\n"
          "    os._exit(0)\n")


def test_a_daemonized_grandchild_ends_with_the_answer() -> None:
    isolated()
    r = run(DAEMON + "def add(a, b):\n    return a + b\n", ADD_TESTS, SHORT)
    assert r.verdict == "passed"


def test_a_daemon_of_an_answer_that_never_ends_goes_with_the_timeout() -> None:
    r = run(DAEMON + "time.sleep(600)\n", "", SHORT)
    assert r.verdict == "timeout"


def test_without_namespaces_the_daemon_holding_the_pipes_does_not_hold_the_scorer(no_namespaces: None) -> None:
    r = run_code(DAEMON + "def add(a, b):\n    return a + b\n", ADD_TESTS, SHORT)
    ended = ticks()
    assert "pid" not in r.guards and r.verdict == "passed"
    assert r.duration_s < SHORT.timeout_s + 15  # it did not wait the daemon's 600 s on its inherited pipes
    if r.uid is not None:  # as root the sandbox had a uid of its own: every process of it was killed
        assert uid_left(r.uid, ended) == 0


# --- item 3: sandboxes cannot hurt each other or the host ----------------------------------------------------------

def _together(*answers: tuple[str, str, ExecLimits]) -> list[ExecResult]:
    """Run answers at the same time, each in its own thread (as the engine's scoring threads do); each is checked
    for leftovers as it ends."""
    results: list[ExecResult | None] = [None] * len(answers)
    left: list[int] = [0] * len(answers)

    def one(i: int) -> None:
        r = results[i] = run_code(*answers[i])
        left[i] = left_behind(r, ticks())

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(answers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is not None for r in results) and left == [0] * len(answers)  # nothing of any lives on
    return [r for r in results if r is not None]


SLOW_CORRECT = ("import time\ntime.sleep(1.5)\ndef add(a, b):\n    return a + b\n", ADD_TESTS, LIMITS)
"""A correct answer that is still running while its neighbour attacks."""


def test_kill_minus_one_reaches_no_other_sandbox() -> None:
    isolated()
    killer = ("import os, signal, time\nend = time.time() + 3\nwhile time.time() < end:\n"
              "    try:\n        os.kill(-1, signal.SIGKILL)\n    except OSError:\n        pass\n", "", LIMITS)
    attack, honest = _together(killer, SLOW_CORRECT)
    assert honest.verdict == "passed", honest.stderr
    assert honest.uid != attack.uid  # as root, each had a uid of its own


def test_a_fork_bomb_stops_at_its_own_limit_and_a_neighbour_still_forks() -> None:
    isolated()
    bomb = ("import os, time\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(60)\n"
            "    except OSError:\n        time.sleep(0.01)\n", "", SHORT)
    forks = ("import subprocess, sys, time\ntime.sleep(1.0)\n"
             "run = lambda: subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True).stdout\n"
             "outs = [run() for _ in range(4)]\n"
             "def add(a, b):\n    return a + b\n", ADD_TESTS + "assert outs == [b'7\\n'] * 4\n", LIMITS)
    attack, honest = _together(bomb, forks)
    assert attack.verdict in ("timeout", "crashed") and "nproc" in attack.guards
    assert honest.verdict == "passed", honest.stderr


def test_an_answer_cannot_kill_arenatui() -> None:
    isolated()
    r = run("import os, signal\nfor pid in (os.getppid(), 1, 0):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
            "    except OSError:\n        pass\ndef add(a, b):\n    return a + b\n", ADD_TESTS)
    # we are still here (this test process is the scorer's parent), and the answer's tests ran
    assert r.verdict in ("passed", "crashed")


def test_the_results_database_and_the_cases_are_not_visible(tmp_path: Path) -> None:
    isolated()
    db = tmp_path / "results.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE results (output TEXT, status TEXT)")
        conn.execute("INSERT INTO results VALUES ('honest', 'failed')")
    cases = tmp_path / "cases.jsonl"
    secret = "sealed-" + os.urandom(8).hex()
    cases.write_text(f'{{"id": "s", "input": "q", "expected": "{secret}", "sealed": true}}\n')
    tamper = (f"import sqlite3\nc = sqlite3.connect({str(db)!r})\n"
              "c.execute(\"UPDATE results SET output = 'TAMPERED', status = 'passed'\")\nc.commit()\n")
    r = run(tamper)
    assert r.verdict == "crashed"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT output, status FROM results").fetchall() == [("honest", "failed")]
    peek = (f"import os\nfor p in ({str(cases)!r}, {str(Path.cwd())!r}, {str(Path(__file__).parent)!r}):\n"
            "    print(p, os.path.exists(p))\n"
            f"print(open({str(cases)!r}).read())\n")
    r = run(peek)
    assert r.verdict == "crashed" and secret not in r.stdout
    assert " True" not in r.stdout  # neither the cases file, the project's directory nor the tests were there


def test_the_home_directory_shows_nothing_but_what_python_needs() -> None:
    isolated()
    home = Path.home()
    r = run(f"import os\nprint(sorted(os.listdir({str(home)!r})) if os.path.isdir({str(home)!r}) else [])\n")
    shown = eval(r.stdout.strip())  # a list of names the sandbox printed
    needed = {p.relative_to(home).parts[0] for p in map(Path, (sys.base_prefix, sys.prefix))
              if p.is_relative_to(home)}
    assert set(shown) <= needed


def test_filling_tmp_stops_at_its_private_tmpfs_and_leaves_nothing() -> None:
    isolated()
    before = set(os.listdir(tempfile.gettempdir()))
    fill = ("import os\nfor i in range(100):\n    with open(f'/tmp/fill{i}', 'wb') as f:\n"
            "        f.write(b'x' * (8 * 1024 * 1024))\n")
    r = run(fill, limits=ExecLimits(timeout_s=30.0, memory_mb=256, tmp_mb=32))
    assert r.verdict == "crashed" and "No space left on device" in r.stderr
    assert not {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("fill")}
    assert r.workdir is not None and not os.path.exists(r.workdir)


def test_the_network_is_its_own() -> None:
    isolated()
    r = run("import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen(1)\n"
            "c = socket.create_connection(s.getsockname(), timeout=5)\nprint('own loopback works')\n")
    assert r.verdict == "passed" and "own loopback works" in r.stdout and r.network_isolated


def test_start_up_says_which_mechanism_and_which_guards() -> None:
    report = sandbox_report()
    text = report.describe()
    assert text.startswith("code_exec sandbox: ")
    if report.missing:
        assert "missing guards" in text
    else:
        assert "namespaces" in text and "missing" not in text


SWEEP = '''
cases_file = "cases.jsonl"

[project]
name = "attacks"

[run]
concurrency = 4
allow_code_exec = true

[[models]]
key = "m"
provider = "sim"
sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }

[[scorers]]
name = "code"
kind = "code_exec"
timeout_s = 30
'''


def test_a_sweep_of_attacks_finishes_with_every_row_honest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The simulated model answers each case's `expected`: here, attacks on the sweep that runs them."""
    isolated()
    import json

    from arenatui.cli import main

    db = tmp_path / "r.db"
    cases_file = tmp_path / "cases.jsonl"
    add = "def add(a, b):\n    return a + b\n"
    answers = {
        "honest": add,
        "early_exit": "def add(a, b):\n    return a - b\nraise SystemExit(0)\n",
        "kill_parent": ("import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n"
                        "    pass\n" + add),
        "kill_all": "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n" + add,
        "tamper": (f"import sqlite3\nc = sqlite3.connect({str(db)!r})\n"
                   "c.execute(\"UPDATE results SET output = 'TAMPERED', status = 'passed'\")\nc.commit()\n" + add),
        "peek": f"print(open({str(cases_file)!r}).read())\n" + add,
    }
    cases_file.write_text("".join(json.dumps({"id": k, "input": "Write add(a, b).", "expected": v,
                                              "tests": ADD_TESTS}) + "\n" for k, v in answers.items()))
    project = tmp_path / "arena.toml"
    project.write_text(SWEEP)
    assert main(["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--no-report"]) == 0
    assert "note: code_exec sandbox: namespaces" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        got = conn.execute("SELECT case_id, status, failure_mode, output FROM results")
        rows = {c: (s, m, o) for c, s, m, o in got}
        run_status = conn.execute("SELECT status FROM runs").fetchall()
    assert run_status == [("finished",)]
    assert rows["honest"][:2] == ("passed", "none")
    assert rows["early_exit"][:2] == ("failed", "tests_not_run")
    assert rows["kill_parent"][:2] == ("passed", "none")  # its parent is the namespace's init: nothing happens
    # kill -1 reaches the process its tests run in (same sandbox, same uid): it fails itself, nothing else
    assert rows["kill_all"][:2] == ("failed", "wrong_answer")
    assert rows["tamper"][:2] == ("failed", "wrong_answer") and rows["peek"][:2] == ("failed", "wrong_answer")
    assert not any(o == "TAMPERED" for _, _, o in rows.values())
    with sqlite3.connect(db) as conn:  # issue 34 item 4: the mechanism is stored with the run
        said, strong = conn.execute("SELECT sandbox, sandbox_strong FROM runs").fetchone()
    assert strong == 1 and said.startswith("code_exec sandbox: namespaces")
    assert main(["report", "last", "--db", str(db), "--format", "md"]) == 0
    assert "- code_exec sandbox: namespaces" in capsys.readouterr().out


# --- issue 34 item 5: a rootless container -------------------------------------------------------------------------

ROOTLESS = """
from arenatui.scoring.code_exec import own_uids, run_code, sandbox_report
print("REPORT", sandbox_report().describe())
r = run_code("def add(a, b):\\n    return a + b\\n", "assert add(2, 2) == 4\\n")
print("RESULT", r.verdict, own_uids(), sorted(r.guards))
"""


def test_root_of_a_rootless_container_builds_the_sandbox_as_a_user_does() -> None:
    # unshare -Ur (rootless podman/docker): uid 0 maps only itself; start-up died on os.chown to an unmapped uid
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to make a rootless container with")
    probe = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this kernel gives no user namespace to make a rootless container: {probe.stderr.strip()}")
    env = dict(os.environ, PYTHONPATH=str(Path(code_exec.__file__).parents[2]))
    out = subprocess.run(["unshare", "-Ur", sys.executable, "-c", ROOTLESS], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    report = next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT"))
    result = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    assert result.startswith("RESULT passed False")  # root there, but no uids of its own to give
    if "through unshare" in report:
        assert "as an unprivileged user" in report and "'pid'" in result and "'user'" in result


# --- issue 34 item 6: memory_mb bounds the sandbox as a whole ------------------------------------------------------

FORKED_MEMORY = ("import os, time\nkids = []\nfor i in range(6):\n    pid = os.fork()\n    if pid == 0:\n"
                 "        b = bytearray(60 * 1024 * 1024)\n        for j in range(0, len(b), 4096):\n"
                 "            b[j] = 1\n        time.sleep(3)\n        os._exit(0)\n    kids.append(pid)\n"
                 "codes = [os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids]\n")
"""Six children of 60 MB each (under memory_mb = 100 one by one, 360 MB together): before, every one lived."""


@pytest.mark.parametrize("bound", ["cgroup", "RSS watchdog"])
def test_memory_mb_bounds_the_sandbox_as_a_whole(bound: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from arenatui.scoring import exec_bounds

    if bound == "cgroup" and exec_bounds.bases() is None:
        pytest.skip("no cgroup can be made here (not root, or no memory and pids controllers): the watchdog holds")
    if bound != "cgroup":
        monkeypatch.setattr(exec_bounds, "_bases", None)
    r = run(FORKED_MEMORY, "assert codes == [0] * 6, codes\n", ExecLimits(timeout_s=30.0, memory_mb=100))
    assert r.verdict == "memory_limit", r.stderr
    assert r.memory_bound.startswith(bound) and "memory" in r.guards
    assert f"passed memory_mb = 100 ({r.memory_bound})" in r.stderr
    b = exec_bounds.bases()
    if bound == "cgroup" and b is not None:  # no sandbox's cgroup is left behind
        assert not [n for n in os.listdir(b.memory) if n.startswith(f"{os.getpid()}-")]


# --- issue 34 item 7: what a SIGKILLed arenatui left running ends at the next start ------------------------------

LEFT_RUNNING = """
import sys, threading, time
import arenatui.scoring.code_exec as ce
from arenatui.scoring import exec_bounds
ce._namespaces_work = False  # the weak sandbox: no PID namespace to take a daemon with it
if sys.argv[2] == "uid":
    exec_bounds._bases = None  # no cgroup either: only the sandbox's uid tells its processes
answer = ("import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    if os.fork() == 0:\\n"
          "        open(%r, 'w').write(str(os.getpid()))\\n        time.sleep(600)\\n    os._exit(0)\\n"
          "time.sleep(600)\\n" % (sys.argv[1] + "/daemon",))
threading.Thread(target=ce.run_code, args=(answer, "", ce.ExecLimits(timeout_s=600.0)), daemon=True).start()
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


@pytest.mark.parametrize("by", ["cgroup", "uid"])
def test_a_daemon_left_by_a_sigkilled_arenatui_ends_at_the_next_start(by: str) -> None:
    import shutil
    import signal
    import subprocess

    from arenatui.scoring import exec_bounds

    if os.geteuid() != 0:
        pytest.skip("needs root: a user's weak sandbox has no uid or cgroup of its own to find its processes by")
    if by == "cgroup" and exec_bounds.bases() is None:
        pytest.skip("no cgroup can be made here")
    where = tempfile.mkdtemp(prefix="arena-left-")
    os.chmod(where, 0o777)  # the weak sandbox's uid writes the daemon's pid here
    arena = subprocess.Popen([sys.executable, "-c", LEFT_RUNNING, where, by])
    daemon = 0
    try:
        for _ in range(3000):  # (no time limit as such: the daemon says its pid when it has started)
            if os.path.exists(f"{where}/daemon") and Path(f"{where}/daemon").read_text():
                daemon = int(Path(f"{where}/daemon").read_text())
                break
            time.sleep(0.01)
        assert daemon
        arena.send_signal(signal.SIGKILL)  # its atexit never runs
        arena.wait()
        assert _alive(daemon) and os.stat(f"/proc/{daemon}").st_uid >= code_exec.SANDBOX_UID_BASE
        reaped = subprocess.run([sys.executable, "-c", "import arenatui.scoring.code_exec as ce\n"
                                 "print(ce.reap_leftovers())"], capture_output=True, text=True, timeout=120)
        assert int(reaped.stdout.strip()) >= 1, reaped.stderr
        assert not _alive(daemon)
    finally:
        if arena.poll() is None:
            arena.kill()
        if daemon and _alive(daemon):
            os.kill(daemon, signal.SIGKILL)
        shutil.rmtree(where, ignore_errors=True)


# --- issue 34 item 8: no user namespace inside the sandbox --------------------------------------------------------

NESTED = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
          "rc = libc.unshare(0x10000000)\nprint('nested', rc, os.strerror(ctypes.get_errno()) if rc else '')\n")


def test_the_answer_cannot_create_a_user_namespace_of_its_own() -> None:
    isolated()
    r = run(NESTED)
    assert r.verdict == "passed" and "nested" in r.guards, r.stderr
    assert r.stdout.startswith("nested -1"), r.stdout  # before: 'nested 0', with every capability inside it


# --- issue 34 item 4: the sandbox never weakens silently -----------------------------------------------------------

UNDER_TMP = """
import json, os, sys
from arenatui.scoring.code_exec import run_code, sandbox_report
report = sandbox_report()
r = run_code("import os\\nprint(os.path.exists(%r), sorted(os.listdir('/tmp')))" % sys.argv[1], "")
print(json.dumps({"guards": sorted(report.guards), "why": report.why, "verdict": r.verdict, "out": r.stdout}))
"""


def test_a_python_under_tmp_still_gets_the_namespace_sandbox() -> None:
    # a venv under /tmp (common in CI) made the root's /tmp clash with the interpreter's bind: no namespaces at all
    isolated()
    import json
    import shutil
    import subprocess

    base = tempfile.mkdtemp(prefix="arena-venv-", dir="/tmp")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", f"{base}/venv"], check=True)
        host_file = Path(base) / "host-only"
        host_file.write_text("x")
        env = dict(os.environ, PYTHONPATH=str(Path(code_exec.__file__).parents[2]))
        out = subprocess.run([f"{base}/venv/bin/python", "-c", UNDER_TMP, str(host_file)], env=env,
                             capture_output=True, text=True, timeout=120)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert {"pid", "mount"} <= set(got["guards"]), got["why"]
        assert got["verdict"] == "passed" and got["out"].startswith("False")  # the host's /tmp is not there
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_weak_sandbox_is_refused_unless_the_project_allows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui.cli import main
    from arenatui.scoring.code_exec import SandboxReport

    weak = SandboxReport("no namespaces: resource limits, a clean environment", frozenset({"net"}),
                         "unshare: Operation not permitted", False)
    monkeypatch.setattr(code_exec, "_report", weak)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "Write add.", "expected": '
                                          '"def add(a, b):\\n    return a + b\\n", "tests": "assert add(1, 1) == 2"}\n')
    project = tmp_path / "arena.toml"
    project.write_text(SWEEP)
    db = tmp_path / "r.db"
    assert main(["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "run.allow_weak_sandbox" in err and "Operation not permitted" in err and "Traceback" not in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)  # refused before any run began
    project.write_text(SWEEP.replace("allow_code_exec = true", "allow_code_exec = true\nallow_weak_sandbox = true"))
    assert main(["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--no-report"]) == 0
    with sqlite3.connect(db) as conn:
        said, strong = conn.execute("SELECT sandbox, sandbox_strong FROM runs").fetchone()
    assert strong == 0 and said.startswith("code_exec sandbox: no namespaces")
    capsys.readouterr()
    assert main(["report", "last", "--db", str(db), "--format", "md"]) == 0
    assert "(the weak sandbox: the project set allow_weak_sandbox)" in capsys.readouterr().out.replace("\\_", "_")


NONROOT = '''
import sys
sys.path.insert(0, sys.argv[1])
import arenatui.scoring.code_exec as ce
print("REPORT", ce.sandbox_report().describe())
r = ce.run_code(sys.argv[2], "assert add(2, 2) == 4\\n", ce.ExecLimits(timeout_s=30.0))
print("RESULT", r.verdict, sorted(r.guards), r.stdout.strip())
'''


def test_as_an_unprivileged_user_the_sandbox_is_built_in_user_namespaces() -> None:
    """The path a normal user takes: run as `nobody` (the module is stdlib-only, so any interpreter will do)."""
    import shutil
    import subprocess

    python, usable = code_exec.sandbox_python()
    if os.geteuid() != 0 or not usable or shutil.which("setpriv") is None:
        pytest.skip("needs root, setpriv and an interpreter other users may run, to become an unprivileged user")
    where = tempfile.mkdtemp(prefix="arena-nonroot-")
    try:
        os.chmod(where, 0o755)
        package = Path(where) / "arenatui" / "scoring"  # the two stdlib-only modules, in a package of their own
        package.mkdir(parents=True)
        for name in ("__init__.py", "scoring/__init__.py", "scoring/code_exec.py", "scoring/exec_bounds.py"):
            here = Path(code_exec.__file__).parent / Path(name).name
            text = "" if name.endswith("__init__.py") else here.read_text()
            (Path(where) / "arenatui" / name).write_text(text)
        for p in Path(where).rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        module = Path(where)
        answer = "import os\ndef add(a, b):\n    return a + b\nprint(os.getuid(), os.path.exists('/work'))\n"
        out = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", python, "-I", "-c",
                              NONROOT, str(module), answer], capture_output=True, text=True, timeout=120, cwd=where)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    report = next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT"))
    if "through unshare" not in report:
        pytest.skip(f"this kernel gives an unprivileged user no namespaces: {report}")
    assert "as an unprivileged user" in report and "missing" not in report
    result = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    assert result.startswith("RESULT passed ['ipc', 'memory', 'mount', 'nested', 'net', 'nproc', 'pid', 'user']")
    assert result.endswith("1000 False")  # uid 1000 of its own namespace, and none of the host's directories


def test_ordinary_answers_still_work_inside() -> None:
    """What honest code does: processes with semaphores, temporary files, its own work dir, threads."""
    answer = ("import multiprocessing as mp, os, tempfile, threading\n"
              "def sq(x):\n    return x * x\n"
              "with mp.Pool(2) as p:\n    squares = p.map(sq, range(5))\n"
              "with tempfile.NamedTemporaryFile('w', delete=False) as f:\n    f.write('t')\n"
              "open('here.txt', 'w').write('h')\n"
              "box = []\nt = threading.Thread(target=lambda: box.append(1))\nt.start()\nt.join()\n")
    tests = ("assert squares == [0, 1, 4, 9, 16]\nassert open(f.name).read() == 't'\n"
             "assert open('here.txt').read() == 'h' and box == [1]\n")
    r = run(answer, tests)
    assert r.verdict == "passed", r.stderr


def _launchers(parent: int) -> list[tuple[int, int, str]]:
    """(pid, sandbox uid, work dir) of the code_exec launchers that are children of `parent`."""
    import json

    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[stat.rfind(b")") + 2:].split()[1]) == parent and len(cmd) > 1 and b"report_fd" in cmd[-2]:
            cfg = json.loads(cmd[-2])
            found.append((int(name), cfg["uid"], cfg["workdir"]))
    return found


def test_ctrl_c_ends_a_sweep_at_once_and_its_sandboxes_with_it(tmp_path: Path) -> None:
    """Issue 20 item 2: a sleeping answer with a daemon, a 600 s timeout, then Ctrl-C (it used to take 604 s)."""
    import json
    import signal
    import subprocess

    isolated()
    answer = DAEMON + "time.sleep(600)\n"
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "slow", "input": "q", "expected": answer,
                                                      "tests": "pass"}) + "\n")
    project = tmp_path / "arena.toml"
    project.write_text(SWEEP.replace("timeout_s = 30", "timeout_s = 600"))
    p = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "-p", str(project), "--db",
                          str(tmp_path / "r.db"), "--quiet", "--no-report"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path, start_new_session=True,
                         env={**os.environ, "ARENATUI_HOME": str(tmp_path / "home")})
    try:
        deadline = time.monotonic() + 60
        seen: dict[tuple[int, int, str], float] = {}
        launchers: list[tuple[int, int, str]] = []
        while not launchers:  # the answer's sandbox: one that lives on (start-up's probe of the sandbox ends at once)
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "no sandbox started"
            time.sleep(0.05)
            alive = _launchers(p.pid)
            for x in alive:
                seen.setdefault(x, time.monotonic())
            launchers = [x for x in alive if time.monotonic() - seen[x] > 1.5]
        os.killpg(p.pid, signal.SIGINT)
        err = p.communicate(timeout=60)[1]  # the answer would run 600 s
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    ended = ticks()
    assert p.returncode == 130 and "Traceback" not in err
    (pid, uid, workdir), = launchers
    deadline = time.monotonic() + 30
    while (os.path.exists(f"/proc/{pid}") or uid_left(uid, ended)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel is reaping them
    assert uid_left(uid, ended) == 0  # the answer and its daemon died with arenatui
    assert not os.path.exists(workdir)  # and its work dir went at exit, though its scoring thread never ended

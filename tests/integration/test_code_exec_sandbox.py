"""code_exec against the accidents it guards against: each ends in the right verdict, nothing left behind."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from arenatui.scoring.code_exec import ExecLimits, ExecResult, extract_code, group_size, run_code

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resource limits are Linux-only")

LIMITS = ExecLimits(timeout_s=30.0, memory_mb=256, max_processes=16, output_kb=16)
"""For code that ends by itself: a timeout no busy machine reaches, so the verdict is never a timeout by accident."""
SHORT = ExecLimits(timeout_s=2.0, memory_mb=256, max_processes=16, output_kb=16)
"""For code that never ends: the timeout is the verdict."""


def run(code: str, tests: str = "", limits: ExecLimits = LIMITS) -> ExecResult:
    r = run_code(code, tests, limits)
    assert r.duration_s < limits.timeout_s + 15  # not a performance check: it says "it did not hang"
    assert r.process_group is not None and group_size(r.process_group) == 0  # nothing of it lives on
    return r


def test_passing_and_failing_tests() -> None:
    good = run("def add(a, b):\n    return a + b\n", "assert add(2, 3) == 5\n")
    assert good.verdict == "passed"
    bad = run("def add(a, b):\n    return a - b\n", "assert add(2, 3) == 5\n")
    assert bad.verdict == "failed" and "AssertionError" in bad.summary()


def test_infinite_loop_is_a_timeout() -> None:
    assert run("while True:\n    pass\n", limits=SHORT).verdict == "timeout"


def test_huge_allocation_is_a_memory_limit() -> None:
    assert run("x = bytearray(4 * 1024 ** 3)\n").verdict == "memory_limit"


def test_fork_loop_ends_and_leaves_no_process_behind() -> None:
    r = run("import os, time\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        time.sleep(0.01)\n", limits=SHORT)
    assert r.verdict in ("timeout", "crashed")


def test_a_hundred_megabytes_of_output_is_capped_and_marked() -> None:
    r = run("import sys\nsys.stdout.write('x' * 100_000_000)\n")
    assert r.truncated and len(r.stdout) <= LIMITS.output_kb * 1024


def test_the_environment_holds_none_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-" + os.urandom(8).hex()
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    r = run("import os\nprint(dict(os.environ))\n")
    assert r.verdict == "passed" and canary not in r.stdout and "OPENAI_API_KEY" not in r.stdout


def test_a_write_outside_its_directory_fails_and_its_directory_is_removed() -> None:
    protected = Path(__file__).parent / "must-not-exist.txt"
    r = run(f"open({str(protected)!r}, 'w').write('x')\n")
    if os.geteuid() == 0:  # dropped to nobody: the checkout is not theirs to write
        assert r.verdict == "crashed" and not protected.exists()
    protected.unlink(missing_ok=True)
    assert r.workdir is not None and not os.path.exists(r.workdir)


def test_a_connect_to_a_local_listener_fails_where_the_network_is_isolated() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        server.settimeout(10)
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    r = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')\n")
    t.join()
    server.close()
    if not r.network_isolated:
        pytest.skip("this kernel allows no new network namespace here; README says the network is not isolated")
    assert r.verdict == "crashed" and accepted == []


def test_code_is_taken_from_the_first_python_block() -> None:
    out = "Here:\n```python\ndef f():\n    return 1\n```\nand a shell line:\n```bash\nrm -rf /\n```"
    assert extract_code(out) == "def f():\n    return 1\n"
    assert extract_code("def f(): return 1") == "def f(): return 1"

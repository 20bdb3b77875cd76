"""The code_exec scorer: run a model's code with the case's tests in a separate, limited process.

This guards against accidents (an infinite loop, a runaway allocation, a fork loop, a giant print, a
stray write or connect), not against an attacker who targets arenatui. What is enforced, on Linux:

- a fresh temporary directory as the working directory, removed afterwards;
- a wall-clock timeout (the process group is killed) and a CPU-time limit just above it;
- address-space (memory), file-size and open-file limits (``setrlimit``);
- a process-count limit: as root the child first drops to the ``nobody`` user, because Linux does not
  apply RLIMIT_NPROC to root; the process group is killed at the end, so nothing is left behind unless
  a child deliberately starts a new session;
- a clean environment (no API keys or any other variable of ours), ``python -I`` (no user site, no
  PYTHONPATH);
- no network where the kernel allows a new network namespace (``unshare``): unprivileged user
  namespaces or root; when it does not, the verdict's ``network_isolated`` is False and says so;
- stdout and stderr capped (the rest is drained and dropped, and the result is marked truncated).

Not enforced: a filesystem view of its own (the child can read what ``nobody``, or the current user when
not root, can read, and write where that user may, such as /tmp), and on macOS/Windows only the timeout,
the clean environment and the output cap apply.

The limits are set by a small launcher that runs in the child before it execs the solution, so the parent
never uses ``preexec_fn`` (unsafe in a process with threads, and scoring runs in a worker thread).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Literal

Verdict = Literal["passed", "failed", "timeout", "memory_limit", "crashed"]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
NOBODY = 65534


@dataclass(frozen=True, slots=True)
class ExecLimits:
    timeout_s: float = 10.0
    """Wall clock for the whole run (the process group is killed at the end of it)."""
    memory_mb: int = 512
    """Address space of each process."""
    file_mb: int = 16
    """Largest file it may write."""
    max_processes: int = 32
    """Processes of the sandbox user at once (enforced when running as root, via the nobody user)."""
    output_kb: int = 64
    """Kept of stdout and of stderr each; the rest is dropped and the result marked truncated."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    verdict: Verdict
    returncode: int | None
    stdout: str
    stderr: str
    truncated: bool
    network_isolated: bool
    duration_s: float
    process_group: int | None = None
    """The sandbox's process group (killed whole at the end): a check that nothing of it lives on."""

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def summary(self, limit: int = 400) -> str:
        """One line for the stored result: the verdict and the last line of stderr that says why."""
        why = ""
        lines = [ln for ln in self.stderr.strip().splitlines() if ln.strip()]
        if self.verdict != "passed" and lines:
            why = ": " + lines[-1].strip()[:limit]
        extra = " (output truncated)" if self.truncated else ""
        return f"{self.verdict}{why}{extra}"


def extract_code(output: str, language: str = "python") -> str:
    """The code in an answer: its first fenced block in that language (or with no language), else all of it."""
    blocks = _FENCE.findall(output)
    for lang, body in blocks:
        if lang.casefold() in (language, "py", "python3", ""):
            return str(body)
    if blocks:
        return str(blocks[0][1])
    return output


# The launcher runs as `python -I -c LAUNCHER limits_json solution`; it must stay standalone (stdlib only).
_LAUNCHER = r"""
import ctypes, json, os, resource, sys
lim = json.loads(sys.argv[1])
isolated = False
try:
    libc = ctypes.CDLL(None, use_errno=True)
    NEWNET, NEWUSER = 0x40000000, 0x10000000
    if os.geteuid() == 0:
        isolated = libc.unshare(NEWNET) == 0
    else:
        isolated = libc.unshare(NEWUSER | NEWNET) == 0
except Exception:
    isolated = False
with open(".arena_sandbox", "w") as f:
    f.write("net=1" if isolated else "net=0")
if os.geteuid() == 0 and lim["drop"]:
    os.setgroups([])
    os.setgid(lim["uid"])
    os.setuid(lim["uid"])
mb = 1024 * 1024
def cap(which, value):
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass
cap(resource.RLIMIT_AS, lim["memory_mb"] * mb)
cap(resource.RLIMIT_FSIZE, lim["file_mb"] * mb)
cap(resource.RLIMIT_CPU, lim["cpu_s"])
cap(resource.RLIMIT_NOFILE, 64)
cap(resource.RLIMIT_CORE, 0)
cap(resource.RLIMIT_NPROC, lim["max_processes"])
os.execv(sys.executable, [sys.executable, "-I", "-B", sys.argv[2]])
"""


def _drain(stream: IO[bytes], keep: int, out: list[bytes], cut: list[bool]) -> None:
    kept = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        if kept < keep:
            piece = chunk[: keep - kept]
            out.append(piece)
            kept += len(piece)
            if len(piece) < len(chunk):
                cut[0] = True
        else:
            cut[0] = True


def _usable_by_others(path: str) -> bool:
    """Whether a user other than the owner (``nobody``) can execute ``path``: every parent searchable."""
    real = os.path.realpath(path)
    try:
        if not os.stat(real).st_mode & 0o001:
            return False
        d = os.path.dirname(real)
        while True:
            if not os.stat(d).st_mode & 0o001:
                return False
            parent = os.path.dirname(d)
            if parent == d:
                return True
            d = parent
    except OSError:
        return False


def sandbox_python() -> tuple[str, bool]:
    """The interpreter for the sandbox, and whether it can run as ``nobody`` (needed as root: see above).

    Our own interpreter when others may run it; else a system one (a pyenv under /root is not); else ours,
    staying root, with only the process watchdog against fork loops.
    """
    if os.name != "posix" or os.geteuid() != 0:
        return sys.executable, False
    for candidate in (sys.executable, "/usr/local/bin/python3", "/usr/bin/python3"):
        if os.path.exists(candidate) and _usable_by_others(candidate):
            return candidate, True
    return sys.executable, False


def group_size(pgid: int) -> int:
    """Live processes in a process group, read from /proc (Linux); 0 where /proc cannot tell. Zombies (killed,
    waiting for their parent or init to reap them) run nothing and are not counted."""
    n = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            n += 1
    return n


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_code(code: str, tests: str, limits: ExecLimits = ExecLimits()) -> ExecResult:
    """Run ``code`` followed by ``tests`` as one Python script; passed when it exits 0."""
    workdir = tempfile.mkdtemp(prefix="arena-exec-")
    t0 = time.monotonic()
    try:
        script = os.path.join(workdir, "solution.py")
        with open(script, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(code)
            f.write("\n\n")
            f.write(tests)
            f.write("\n")
        posix = os.name == "posix" and sys.platform.startswith("linux")
        python, drop = sandbox_python()
        if drop:
            os.chown(workdir, NOBODY, NOBODY)
            os.chown(script, NOBODY, NOBODY)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
        lim = {"memory_mb": limits.memory_mb, "file_mb": limits.file_mb, "max_processes": limits.max_processes,
               "cpu_s": int(limits.timeout_s) + 1, "uid": NOBODY, "drop": drop}
        cmd = ([python, "-I", "-c", _LAUNCHER, json.dumps(lim), script] if posix
               else [python, "-I", "-B", script])
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        assert proc.stdout is not None and proc.stderr is not None
        keep = limits.output_kb * 1024
        out: list[bytes] = []
        err: list[bytes] = []
        cut = [False]
        readers = [threading.Thread(target=_drain, args=(proc.stdout, keep, out, cut), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stderr, keep, err, cut), daemon=True)]
        for r in readers:
            r.start()
        timed_out = too_many = False
        deadline = t0 + limits.timeout_s
        # RLIMIT_NPROC does not bind root (nor, on some kernels, a user namespace), so a watchdog counts the
        # group's processes too; it is what stops a fork loop when the sandbox could not drop to nobody.
        while True:
            try:
                proc.wait(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                timed_out = True
                break
            if posix and group_size(proc.pid) > limits.max_processes:
                too_many = True
                break
        # Whatever happened, nothing of the sandbox outlives the scorer: the whole group goes, again while a
        # fork loop still has members that were being born as the first signal went out.
        _kill_group(proc.pid)
        proc.wait()
        if posix:
            for _ in range(200):
                if group_size(proc.pid) == 0:
                    break
                _kill_group(proc.pid)
                time.sleep(0.01)
        for r in readers:
            r.join(timeout=2.0)
        proc.stdout.close()
        proc.stderr.close()
        stdout = b"".join(out).decode("utf-8", "replace")
        stderr = b"".join(err).decode("utf-8", "replace")
        isolated = False
        try:
            with open(os.path.join(workdir, ".arena_sandbox"), encoding="ascii") as f:
                isolated = f.read().strip() == "net=1"
        except OSError:
            pass
        rc = proc.returncode
        verdict: Verdict
        tail = stderr[-4000:]
        if too_many:
            verdict = "crashed"
            stderr += f"\nstopped: more than {limits.max_processes} processes at once"
        elif timed_out or rc == -signal.SIGXCPU:
            verdict = "timeout"
        elif rc == 0:
            verdict = "passed"
        elif "MemoryError" in tail:
            verdict = "memory_limit"
        elif re.search(r"^AssertionError\b", tail, re.MULTILINE):
            verdict = "failed"
        else:
            verdict = "crashed"
        return ExecResult(verdict, rc, stdout, stderr, cut[0], isolated, time.monotonic() - t0, proc.pid)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

"""The code_exec scorer: run a model's code, then the case's tests, in a sandbox of its own.

On Linux each answer runs in its own namespaces when the kernel allows them (as root, or with unprivileged user
namespaces), set up by a small launcher through ``unshare(2)``/``mount(2)`` called with ctypes (no external tool):

- PID namespace: the answer sees and can signal only its own processes; its namespace's init ends the moment the
  answer's own process ends, and the kernel then kills every process left in it (a daemonized grandchild too);
- mount namespace with a root of its own: the system directories and Python's installation read-only, a private
  size-capped tmpfs ``/tmp`` holding the work dir (the only writable places), a minimal ``/dev``, its own
  ``/proc``; the project directory, the results database, cases files and home directories are not there;
- network namespace (only its own loopback), IPC and UTS namespaces;
- a user namespace in which the answer is an unprivileged user without capabilities; as root, it is also a host
  uid of its own per concurrent sandbox (``SANDBOX_UID_BASE`` + a slot held with a lock file), so a process
  limit (``RLIMIT_NPROC``) counts that sandbox alone.

Where namespaces are refused the launcher runs with what is left and says which guards are missing
(`sandbox_report`, said at start-up and in the run's notes): a clean environment, resource limits, a distinct
uid as root (whose processes are all killed at the end) and a network namespace if that alone is allowed.

The tests run in a process the answer's code never ran in (`_HARNESS`): it reads the per-call nonce and the tests
(deleting tests.py), makes itself non-dumpable, and only then starts the answer in a fresh interpreter of its own
(`_ANSWER_SIDE`, loading it as module ``solution``, so an ``if __name__ == "__main__":`` block does not run). The
tests see ``solution`` through a socket: plain data as copies, any other object as a proxy that equals only itself.
The run passes only when the tests' process wrote the nonce on a pipe of its own *and* exited 0; an answer that ends
before its tests ran to their end is `tests_not_run`. What the answer can still do: compute its answers any way it
likes in its own process, kill the tests' process (a fail), and return objects whose methods lie (only their plain
results reach an assert).

Output is read from pipes with ``select`` in the scoring thread and never waited on after the answer ended: a
process that kept the pipes open (only possible without a PID namespace) cannot hold the sweep.
"""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from arenatui.scoring.exec_bounds import MB, WATCHDOG_S, SandboxCgroup, leftover_cgroups, make_cgroup, sandbox_rss

Verdict = Literal["passed", "failed", "timeout", "memory_limit", "crashed", "tests_not_run"]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
NOBODY = 65534
SANDBOX_UID_BASE = 1_700_000_000
"""As root, sandbox k runs as host uid SANDBOX_UID_BASE + k (no such user exists; nothing is owned by it)."""
SANDBOX_SLOTS = 4096

GUARDS: dict[str, str] = {
    "pid": "a PID namespace (the answer signals only its own processes; all of them end with it)",
    "mount": "a filesystem of its own (system and Python read-only; a private /tmp and work dir the only "
             "writable places; no project directory, results database or home)",
    "net": "no network (a network namespace)",
    "ipc": "an IPC namespace",
    "user": "a user namespace (no capability, no host user's privilege)",
    "uid": "a host uid of its own per concurrent sandbox (as root)",
    "nproc": "a process limit counted for this sandbox alone",
    "nested": "no user namespace inside the sandbox (max_user_namespaces = 0 in the answer's own)",
    "memory": "memory_mb and the process limit bound the sandbox as a whole (a cgroup of its own)",
}
"""Each guard the sandbox may have, in the words the run's notes use."""


@dataclass(frozen=True, slots=True)
class ExecLimits:
    timeout_s: float = 10.0
    """Wall clock for the whole run (the sandbox is killed at the end of it)."""
    memory_mb: int = 512
    """Address space of each process, and memory of the sandbox as a whole (`exec_bounds`)."""
    file_mb: int = 16
    """Largest file it may write."""
    max_processes: int = 32
    """Processes of the sandbox at once."""
    output_kb: int = 64
    """Kept of stdout and of stderr each; the rest is dropped and the result marked truncated."""
    tmp_mb: int = 64
    """Size of the private /tmp (work dir included) when the sandbox has a filesystem of its own."""


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
    """The launcher's process group (killed whole at the end): a check that nothing of it lives on."""
    guards: frozenset[str] = frozenset()
    """The guards of GUARDS this run had."""
    uid: int | None = None
    """The host uid the answer ran as, when it had one of its own (as root): a check that nothing of it lives on."""
    note: str = ""
    """Why guards are missing, as the launcher found (the kernel's refusal)."""
    workdir: str | None = None
    """The host directory it ran from (removed by the time the result is returned)."""
    memory_bound: str = ""
    """What bounded the sandbox's memory as a whole: 'cgroup v2', 'cgroup v1', 'RSS watchdog' ('' off Linux)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(g for g in GUARDS if g not in self.guards)

    def summary(self, limit: int = 400) -> str:
        """One line for the stored result: the verdict and the last line of stderr that says why."""
        if self.verdict == "tests_not_run":
            code = f"code {self.returncode}" if self.returncode is not None else "no exit code"
            return f"tests_not_run: the answer exited ({code}) before its tests ran to the end"
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


# The answer's side: `python -I -B -c ANSWER_SIDE SOCKET_FD KEY` in the work dir, started by the tests' side (below).
# It loads solution.py as module `solution`, then serves the tests' side over the socket: each reply is a frame
# KEY + length + pickle, the value itself when it is plain data (exact builtin types), else a handle to the object.
# The answer runs in this process and may rewrite anything in it: its replies are its answer, nothing more.
_ANSWER_SIDE = r"""
import os, sys
def main():
    import io, pickle, socket, struct, traceback, types
    conn = socket.socket(fileno=int(sys.argv[1]))
    key = sys.argv[2].encode()
    sys.argv = ["solution.py"]
    objects = {}
    PLAIN = (int, float, complex, str, bytes, bytearray, bool, type(None))
    def plain(x, depth=0):
        t = type(x)
        if t in PLAIN:
            return True
        if depth > 40:
            return False
        if t in (list, tuple, set, frozenset):
            return all(plain(y, depth + 1) for y in x)
        if t is dict:
            return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in x.items())
        return False
    def keep(x):
        objects[len(objects) + 1] = x
        return len(objects)
    def flush():
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except BaseException:
                pass
    def send(msg):
        flush()
        data = pickle.dumps(msg, 4)
        conn.sendall(key + struct.pack(">Q", len(data)) + data)
    def reply(x):
        send(("value", x) if plain(x) else ("handle", keep(x)))
    buf = bytearray()
    def exact(n):
        while len(buf) < n:
            chunk = conn.recv(1 << 20)
            if not chunk:
                os._exit(0)  # the tests' side is gone
            buf.extend(chunk)
        out = bytes(buf[:n])
        del buf[:n]
        return out
    mod = types.ModuleType("solution")
    mod.__file__ = os.path.abspath("solution.py")
    sys.modules["solution"] = mod
    with open("solution.py", encoding="utf-8", errors="surrogateescape") as f:
        source = f.read()
    try:
        exec(compile(source, "solution.py", "exec"), mod.__dict__)
    except SystemExit:
        raise  # an exit before the tests: the tests' side sees this process end, so `tests_not_run`
    except BaseException as e:
        traceback.print_exc()
        send(("failed", type(e).__name__))
        os._exit(1)
    names = {}
    for name, value in list(mod.__dict__.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            names[name] = ("module", str(getattr(value, "__name__", "")), keep(value))
        elif plain(value):
            names[name] = ("value", value)
        else:
            names[name] = ("handle", keep(value))
    send(("loaded", names))
    def unarg(a):
        return objects[a[1]] if a[0] == "h" else a[1]
    while True:
        (n,) = struct.unpack(">Q", exact(8))
        op, hid, *rest = pickle.loads(exact(n))
        try:
            obj = objects[hid]
            if op == "call":
                result = obj(*[unarg(a) for a in rest[0]], **{k: unarg(v) for k, v in rest[1].items()})
            elif op == "getattr":
                result = getattr(obj, rest[0])
            elif op == "setattr":
                result = setattr(obj, rest[0], unarg(rest[1]))
            elif op == "delattr":
                result = delattr(obj, rest[0])
            elif op == "getitem":
                result = obj[unarg(rest[0])]
            elif op == "setitem":
                obj[unarg(rest[0])] = unarg(rest[1])
                result = None
            elif op == "delitem":
                del obj[unarg(rest[0])]
                result = None
            elif op == "iter":
                send(("handle", keep(iter(obj))))
                continue
            elif op == "next":
                result = next(obj)
            elif op == "len":
                result = int(len(obj))
            elif op == "bool":
                result = bool(obj)
            elif op == "contains":
                result = bool(unarg(rest[0]) in obj)
            elif op == "repr":
                result = str(repr(obj))
            elif op == "str":
                result = str(str(obj))
            elif op == "enter":
                result = obj.__enter__()
            elif op == "exit":
                result = bool(obj.__exit__(None, None, None))
            else:
                raise TypeError("unknown operation " + op)
        except SystemExit:
            raise  # the answer ended its process in a call: no test can pass after that
        except BaseException as e:
            try:
                text = str(e)[:2000]
            except BaseException:
                text = ""
            send(("raise", type(e).__name__, text))
            continue
        reply(result)
main()
"""

# The tests' side runs as `python -I -B -c HARNESS DONE_FD` in the work dir, the nonce on stdin; stdlib only. It
# is a process the answer's code never runs in: it reads the nonce, reads and deletes tests.py, makes itself
# non-dumpable (a process of the same uid can then neither trace it nor read its memory or descriptors), and only
# then starts the answer's side in a fresh interpreter. The tests see module `solution` as proxies: plain data
# (exact builtin types, decoded by an unpickler that builds nothing else) is a copy; any other object stays in the
# answer's process and is reached through calls, attributes, items, len, iteration, bool, repr and `with`; a proxy
# equals only itself, so an object "equal to everything" never passes an assert. The tests' side writes the
# nonce on its own pipe and exits 0 only when the tests ran to their end.
_HARNESS = r"""
import os, sys
def main():
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    except Exception:
        pass
    nonce = sys.stdin.buffer.read().decode()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    import builtins, io, pickle, socket, struct, traceback, types
    sys.argv = ["tests.py"]
    def said(stage, exc=""):
        os.write(fd, ("%s %s %s\n" % (nonce, stage, exc)).encode())
    def flush():
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except BaseException:
                pass
    with open("tests.py", encoding="utf-8", errors="surrogateescape") as f:
        source = f.read()
    os.unlink("tests.py")  # the answer never reads its tests
    try:
        code = compile(source, "tests.py", "exec")
    except BaseException as e:
        traceback.print_exc()
        flush()
        said("tests", type(e).__name__)
        os._exit(1)
    key = os.urandom(16).hex().encode()
    ours, theirs = socket.socketpair()
    answer = os.fork()
    if answer == 0:
        try:
            if os.fork():  # twice: the answer's parent is the namespace's init, not this process
                os._exit(0)
            ours.close()
            os.set_inheritable(theirs.fileno(), True)
            os.execv(sys.executable, [sys.executable, "-I", "-B", "-c", ANSWER_SIDE, str(theirs.fileno()),
                                      key.decode()])
        finally:
            os._exit(127)
    theirs.close()
    os.waitpid(answer, 0)
    class Ended(BaseException):
        pass
    def end(code):
        flush()  # the answer's side ends when its socket closes with this process (and with the sandbox anyway)
        os._exit(code)
    SAFE = {"complex", "set", "frozenset", "bytearray"}
    class Plain(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "builtins" and name in SAFE:
                return getattr(builtins, name)
            raise pickle.UnpicklingError("only plain data crosses from the answer's process, not %s.%s"
                                         % (module, name))
    buf = bytearray()
    def fill(n):
        while len(buf) < n:
            try:
                chunk = ours.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                raise Ended()
            buf.extend(chunk)
    def receive():
        while True:  # bytes before a frame's key are not a frame (the answer may write on any descriptor it has)
            fill(len(key))
            at = buf.find(key)
            if at >= 0:
                del buf[:at + len(key)]
                break
            del buf[:len(buf) - len(key) + 1]
        fill(8)
        (n,) = struct.unpack(">Q", bytes(buf[:8]))
        del buf[:8]
        if n > 256 << 20:
            raise MemoryError("the answer's process sent %d bytes at once" % n)
        fill(n)
        data = bytes(buf[:n])
        del buf[:n]
        return Plain(io.BytesIO(data)).load()
    def error(name, text):
        t = getattr(builtins, name, None) if type(name) is str else None
        if isinstance(t, type) and issubclass(t, BaseException):
            try:
                return t(text)
            except Exception:
                return t()
        return type(name if type(name) is str and name.isidentifier() else "AnswerError", (Exception,), {})(text)
    def rpc(*msg):
        data = pickle.dumps(msg, 4)
        try:
            ours.sendall(struct.pack(">Q", len(data)) + data)
        except OSError:
            raise Ended() from None
        got = receive()
        if type(got) is tuple and len(got) == 2 and got[0] == "value":
            return got[1]
        if type(got) is tuple and len(got) == 2 and got[0] == "handle" and type(got[1]) is int:
            return Remote(got[1])
        if type(got) is tuple and len(got) == 3 and got[0] == "raise" and type(got[2]) is str:
            raise error(got[1], got[2])
        raise RuntimeError("the answer's process sent no reply this harness reads")
    def arg(x):
        return ("h", object.__getattribute__(x, "_hid")) if type(x) is Remote else ("v", x)
    class Remote:
        __slots__ = ("_hid",)
        def __init__(self, hid):
            object.__setattr__(self, "_hid", hid)
        def __call__(self, *a, **k):
            return rpc("call", self._hid, [arg(x) for x in a], {n: arg(v) for n, v in k.items()})
        def __getattr__(self, name):
            return rpc("getattr", self._hid, name)
        def __setattr__(self, name, value):
            rpc("setattr", self._hid, name, arg(value))
        def __delattr__(self, name):
            rpc("delattr", self._hid, name)
        def __getitem__(self, k):
            return rpc("getitem", self._hid, arg(k))
        def __setitem__(self, k, v):
            rpc("setitem", self._hid, arg(k), arg(v))
        def __delitem__(self, k):
            rpc("delitem", self._hid, arg(k))
        def __len__(self):
            return rpc("len", self._hid)
        def __iter__(self):
            return rpc("iter", self._hid)
        def __next__(self):
            return rpc("next", self._hid)
        def __contains__(self, x):
            return rpc("contains", self._hid, arg(x))
        def __bool__(self):
            return rpc("bool", self._hid)
        def __repr__(self):
            return rpc("repr", self._hid)
        def __str__(self):
            return rpc("str", self._hid)
        def __enter__(self):
            return rpc("enter", self._hid)
        def __exit__(self, *exc):
            return rpc("exit", self._hid)
    try:
        first = receive()
    except Ended:
        end(1)  # the answer ended while loading: no nonce, so `tests_not_run`
    except BaseException as e:
        traceback.print_exc()
        said("load", type(e).__name__)
        end(1)
    if type(first) is tuple and len(first) == 2 and first[0] == "failed":
        said("load", str(first[1]))
        end(1)
    if not (type(first) is tuple and len(first) == 2 and first[0] == "loaded" and type(first[1]) is dict):
        print("the answer's process sent no list of its names", file=sys.stderr)
        said("load", "RuntimeError")
        end(1)
    mod = types.ModuleType("solution")
    mod.__file__ = os.path.abspath("solution.py")
    sys.modules["solution"] = mod
    for name, item in first[1].items():
        if type(name) is not str or type(item) is not tuple or not item:
            continue
        if item[0] == "value" and len(item) == 2:
            mod.__dict__[name] = item[1]
        elif item[0] == "handle" and len(item) == 2 and type(item[1]) is int:
            mod.__dict__[name] = Remote(item[1])
        elif item[0] == "module" and len(item) == 3 and type(item[1]) is str and type(item[2]) is int:
            top = item[1].partition(".")[0]
            if item[1] in sys.modules:
                mod.__dict__[name] = sys.modules[item[1]]
            elif top in sys.stdlib_module_names and top not in ("antigravity", "this"):
                try:
                    import importlib
                    mod.__dict__[name] = importlib.import_module(item[1])
                except BaseException:
                    mod.__dict__[name] = Remote(item[2])
            else:
                mod.__dict__[name] = Remote(item[2])
    try:
        exec(code, mod.__dict__)
    except (SystemExit, Ended):
        end(1)  # an exit inside the tests, or the answer's process ended: the tests did not run to their end
    except BaseException as e:
        traceback.print_exc()
        flush()
        said("tests", type(e).__name__)
        end(1)
    flush()
    said("done")
    end(0)
ANSWER_SIDE = @ANSWER_SIDE@
main()
""".replace("@ANSWER_SIDE@", repr(_ANSWER_SIDE))

# The launcher runs as `python -I -S -c LAUNCHER CONFIG_JSON` (stdin: the nonce); it must stay standalone (stdlib).
# It reports on cfg["report_fd"] (closed before the answer runs): "guard NAME", "missing NAME WHY", "status N"
# (the harness's wait status, when a namespace init stood between them).
_LAUNCHER = r"""
import ctypes, fcntl, json, os, platform, resource, signal, socket, struct, sys
cfg = json.loads(sys.argv[1])
rep, done = cfg["report_fd"], cfg["done_fd"]
os.set_inheritable(rep, False)
try:  # first: everything the sandbox starts is inside its cgroup
    for procs in cfg["cgroup_procs"]:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    if cfg["cgroup_procs"]:
        os.write(rep, b"guard memory\n")
except OSError as e:
    os.write(rep, ("missing memory %s\n" % e).encode())
nonce = sys.stdin.buffer.read()
r, w = os.pipe()
os.write(w, nonce)
os.close(w)
os.dup2(r, 0)
os.close(r)
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: arenatui gone (even SIGKILLed), the sandbox goes with it
if os.getppid() != cfg["parent"]:
    os._exit(1)
NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET = 0x20000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
root = cfg["root"]  # root with the sandbox uids mapped: not so in a rootless container (unshare -Ur)
uid = cfg["uid"]
def say(line):
    os.write(rep, (line + "\n").encode())
def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))
def b(s):
    return None if s is None else s.encode()
def mount(src, dst, fstype, flags, data=None):
    check(libc.mount(b(src), b(dst), b(fstype), ctypes.c_ulong(flags), b(data)), "mount " + dst)
def write(path, text):
    with open(path, "w") as f:
        f.write(text)
def own_map(inside, outside_uid, outside_gid):
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", "%d %d 1" % (inside, outside_uid))
    write("/proc/self/gid_map", "%d %d 1" % (inside, outside_gid))
def cap(which, value):
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass
def limits(nproc):
    mb = 1024 * 1024
    cap(resource.RLIMIT_AS, cfg["memory_mb"] * mb)
    cap(resource.RLIMIT_FSIZE, cfg["file_mb"] * mb)
    cap(resource.RLIMIT_CPU, cfg["cpu_s"])
    cap(resource.RLIMIT_NOFILE, 64)
    cap(resource.RLIMIT_CORE, 0)
    if nproc:
        cap(resource.RLIMIT_NPROC, cfg["max_processes"])
def harness(python, home):
    env = dict(os.environ, HOME=home, TMPDIR=home)
    os.execve(python, [python, "-I", "-B", "-c", cfg["harness"], str(done)], env)
def drop_to_uid():
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc.prctl(1, signal.SIGKILL)  # a changed uid cleared the parent-death signal
PIVOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
def build_root(new):
    # A root of our own: a tmpfs with read-only binds of what Python needs, then pivot_root into it.
    mount(None, "/", None, REC | PRIVATE)
    os.mkdir(new)
    mount("tmpfs", new, "tmpfs", NOSUID | NODEV, "mode=755,size=1m")
    # the private /tmp first: an interpreter under /tmp (a CI venv) is then bound inside it, not under it
    os.makedirs(new + "/tmp")
    mount("tmpfs", new + "/tmp", "tmpfs", NOSUID | NODEV, "mode=1777,size=%dm" % cfg["tmp_mb"])
    keep = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] + cfg["python_dirs"]
    for d in keep:
        if not os.path.lexists(d):
            continue
        target = new + d
        if os.path.islink(d) and d.count("/") == 1:
            os.symlink(os.readlink(d), target)
            continue
        real = os.path.realpath(d)
        if not os.path.isdir(real) or os.path.exists(target):
            continue
        os.makedirs(target, exist_ok=True)
        mount(real, target, None, BIND | REC)
        try:
            mount(None, target, None, REMOUNT | BIND | RDONLY | NOSUID)
        except OSError:
            pass  # a mount whose flags a user namespace may not change: still not writable by the sandbox user
    os.makedirs(new + "/dev")
    mount("tmpfs", new + "/dev", "tmpfs", NOSUID | NOEXEC, "mode=755,size=64k")
    for name in ("null", "zero", "full", "random", "urandom"):
        open(new + "/dev/" + name, "w").close()
        mount("/dev/" + name, new + "/dev/" + name, None, BIND)
    # /dev/shm (POSIX semaphores: multiprocessing) is the private /tmp: the one writable place stays the one
    for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                     ("stderr", "/proc/self/fd/2"), ("shm", "/tmp")):
        os.symlink(to, new + "/dev/" + name)
    os.makedirs(new + "/tmp/work")
    for name in ("solution.py", "tests.py"):
        with open(os.path.join(cfg["workdir"], name), "rb") as src, open(new + "/tmp/work/" + name, "wb") as dst:
            dst.write(src.read())
    os.makedirs(new + "/proc")
    try:
        mount("proc", new + "/proc", "proc", NOSUID | NODEV | NOEXEC)
    except OSError as e:
        say("note no /proc in the sandbox (%s)" % e)
    os.makedirs(new + "/.old")
    number = PIVOT.get(platform.machine())
    if number is None:
        raise OSError(0, "pivot_root: unknown system call number on " + platform.machine())
    os.chdir(new)
    check(libc.syscall(ctypes.c_long(number), b(new), b(new + "/.old")), "pivot_root")
    os.chdir("/")
    check(libc.umount2(b"/.old", 2), "umount old root")
    os.rmdir("/.old")
    try:
        mount(None, "/", None, REMOUNT | BIND | RDONLY | NOSUID)
        mount(None, "/dev", None, REMOUNT | BIND | RDONLY | NOSUID | NOEXEC)
    except OSError:
        pass
def loopback_up():
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", 0x1 | 0x8 | 0x40, b""))  # SIOCSIFFLAGS UP|LOOPBACK|RUNNING
        s.close()
    except OSError:
        pass
def in_namespaces():
    me, my_gid = os.geteuid(), os.getegid()
    if root:
        check(libc.unshare(NEWNS | NEWPID | NEWNET | NEWIPC | NEWUTS), "unshare")
    else:
        check(libc.unshare(NEWUSER | NEWNS | NEWPID | NEWNET | NEWIPC | NEWUTS), "unshare")
        own_map(0, me, my_gid)
    init = os.fork()
    if init:  # the launcher: wait for the namespace's init; its death takes the namespace with it
        while True:
            try:
                os.waitpid(init, 0)
                break
            except ChildProcessError:
                break
        os._exit(0)
    # the namespace's init (PID 1): dies with the launcher, builds the root, runs the harness, reaps orphans
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()
    try:
        build_root(cfg["workdir"] + "/root")
    except OSError as e:
        say("fatal the sandbox's filesystem could not be built: %s" % e)
        os._exit(0)
    loopback_up()
    for g in ("pid", "mount", "net", "ipc"):
        say("guard " + g)
    if root:
        os.chown("/tmp/work", uid, uid)
        for name in ("solution.py", "tests.py"):
            os.chown("/tmp/work/" + name, uid, uid)
    child = os.fork()
    if child == 0:
        os.setsid()
        os.chdir("/tmp/work")
        inside_uid = 0
        if root:
            drop_to_uid()
            say("guard uid")
            inside_uid = uid
        try:  # the answer: an unprivileged user of a user namespace of its own; its mounts are locked
            libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: a changed uid made /proc/self root's, the maps included
            check(libc.unshare(NEWUSER), "unshare user")
            own_map(1000, inside_uid, inside_uid)
            say("guard user")
            say("guard nproc")
            try:  # while it holds this namespace's capabilities: no user namespace inside it, whose capabilities
                # would open the kernel's namespaced code (mounts, netfilter, ...) to the answer
                write("/proc/sys/user/max_user_namespaces", "0")
                say("guard nested")
            except OSError as e:
                say("missing nested %s" % e)
        except OSError as e:
            if root:
                say("guard nproc")
                say("missing user %s" % e)
            else:  # it would keep the capabilities of the namespace that built its root: refused
                say("fatal no nested user namespace for the answer (%s)" % e)
                os._exit(0)
        limits(True)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        harness(cfg["python"], "/tmp/work")
    while True:  # reap everything; stop when the answer's own process ended (the kernel kills the rest)
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        if pid == child:
            say("status %d" % status)
            os._exit(0)
net = False
if cfg["namespaces"]:
    try:
        in_namespaces()
    except OSError as e:
        say("fallback %s" % e)
try:
    if root:
        net = libc.unshare(NEWNET) == 0
    else:
        net = libc.unshare(NEWUSER | NEWNET) == 0
except Exception:
    net = False
if net:
    say("guard net")
nproc = False  # not as a user: RLIMIT_NPROC would count every process of the user, arenatui's included
if root and cfg["drop"]:
    drop_to_uid()
    say("guard uid")
    nproc = True
limits(nproc)
if nproc:
    say("guard nproc")
harness(cfg["fallback_python"], cfg["workdir"])
"""


def _usable_by_others(path: str) -> bool:
    """Whether a user other than the owner can execute ``path``: every parent searchable."""
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


def own_uids() -> bool:
    """Whether sandboxes get host uids of their own: as root whose user namespace maps the sandbox uids (and gids).
    A rootless container (`unshare -Ur`, rootless podman or docker) maps a few: its root then builds the sandbox the
    way an unprivileged user does, in user namespaces of its own."""
    if os.name != "posix" or os.geteuid() != 0:
        return False
    lo, hi = SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_SLOTS
    for which in ("uid_map", "gid_map"):
        try:
            with open(f"/proc/self/{which}") as f:
                ranges = [tuple(int(x) for x in ln.split()) for ln in f if len(ln.split()) == 3]
        except (OSError, ValueError):
            continue  # no map to read (not Linux): root is root
        if not any(inside <= lo and hi <= inside + count for inside, _, count in ranges):
            return False
    return True


def sandbox_python() -> tuple[str, bool]:
    """The interpreter for a sandbox without namespaces, and whether it can run as another uid (as root).

    Our own interpreter when others may run it; else a system one (a pyenv under /root is not); else ours,
    staying root, with only the process watchdog against fork loops.
    """
    if os.name != "posix" or not own_uids():
        return sys.executable, False
    for candidate in (sys.executable, "/usr/local/bin/python3", "/usr/bin/python3"):
        if os.path.exists(candidate) and _usable_by_others(candidate):
            return candidate, True
    return sys.executable, False


def _python_dirs() -> list[str]:
    """What the sandbox's root keeps of Python's installation (besides /usr): its prefixes, resolved."""
    dirs: list[str] = []
    for d in (sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(sys.executable))):
        real = os.path.realpath(d)
        if real != "/" and real not in dirs:
            dirs.append(real)
    return dirs


def _processes(pgid: int | None = None, uid: int | None = None) -> list[int]:
    """Live processes (zombies left out) in a process group or of a real uid, read from /proc (Linux)."""
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            owner = os.stat(f"/proc/{name}").st_uid if uid is not None else None
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) <= 2 or fields[0] in (b"Z", b"X"):
            continue
        if (pgid is not None and int(fields[2]) == pgid) or (uid is not None and owner == uid):
            found.append(int(name))
    return found


def group_size(pgid: int) -> int:
    """Live processes in a process group; 0 where /proc cannot tell."""
    return len(_processes(pgid=pgid))


def _kill_all(pgid: int | None, uid: int | None) -> None:
    """Kill the launcher's group and, as root, every process of the sandbox's uid, until none is left."""
    for _ in range(200):
        try:
            if pgid is not None:
                os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        left = _processes(pgid=pgid, uid=uid)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


_slots_lock = threading.Lock()


def _lock_dir() -> str:
    """Where the sandbox uids' slot locks are (shared by every arenatui of this machine)."""
    return os.path.join(tempfile.gettempdir(), "arenatui-sandbox-uids")


_reaped_lock = threading.Lock()
_reaped = False


def reap_leftovers() -> int:
    """Once per process, before its first sandbox: kill what an arenatui that was SIGKILLed left running (its atexit
    never ran). That is every process in a sandbox cgroup whose arenatui is gone, and, as root, every process of a
    sandbox uid whose slot lock no live arenatui holds (a daemon of the weak sandbox's answer: with no PID
    namespace, nothing else ends it). Returns how many processes it killed."""
    global _reaped
    with _reaped_lock:
        if _reaped:
            return 0
        _reaped = True
        killed = 0
        for cgroup in leftover_cgroups():
            killed += len(cgroup.pids())
            cgroup.remove()
        if not own_uids():
            return killed
        owners: set[int] = set()
        try:
            names = os.listdir("/proc")
        except OSError:
            names = []
        for name in names:
            try:
                owner = os.stat(f"/proc/{name}").st_uid if name.isdigit() else -1
            except OSError:
                continue
            if SANDBOX_UID_BASE <= owner < SANDBOX_UID_BASE + SANDBOX_SLOTS:
                owners.add(owner)
        for uid in sorted(owners):
            try:  # a slot's lock held by a live arenatui: its sandbox is running, not left over
                fd = os.open(os.path.join(_lock_dir(), str(uid - SANDBOX_UID_BASE)), os.O_CREAT | os.O_RDWR, 0o600)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                killed += len(_processes(uid=uid))
                _kill_all(None, uid)
            finally:
                os.close(fd)
        return killed
_slots_used: set[int] = set()


@contextmanager
def _uid_slot() -> Iterator[int]:
    """A host uid no other sandbox (of this process, or of another arenatui holding its lock file) uses now."""
    lock_dir = _lock_dir()
    try:
        os.makedirs(lock_dir, mode=0o700, exist_ok=True)
        shared = os.stat(lock_dir).st_uid == os.geteuid()
    except OSError:
        shared = False
    with _slots_lock:
        slots = [k for k in range(SANDBOX_SLOTS) if k not in _slots_used]
    for k in slots:
        with _slots_lock:
            if k in _slots_used:
                continue
            _slots_used.add(k)
        fd = -1
        try:
            if shared:
                fd = os.open(os.path.join(lock_dir, str(k)), os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
            yield SANDBOX_UID_BASE + k
            return
        finally:
            if fd >= 0:
                os.close(fd)
            with _slots_lock:
                _slots_used.discard(k)
    raise RuntimeError(f"all {SANDBOX_SLOTS} sandbox uids are in use")


def _read_some(fd: int, keep: int, out: list[bytes], kept: list[int], cut: list[bool]) -> bool:
    """Read what the pipe holds now, up to 1 MB (non-blocking, so a writer that never stops cannot hold the
    caller); False at its end. Only the first `keep` bytes are kept."""
    for _ in range(16):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not chunk:
            return False
        if kept[0] < keep:
            piece = chunk[: keep - kept[0]]
            out.append(piece)
            kept[0] += len(piece)
            if len(piece) < len(chunk):
                cut[0] = True
        else:
            cut[0] = True
    return True


def run_code(code: str, tests: str, limits: ExecLimits = ExecLimits()) -> ExecResult:
    """Load ``code``, then run ``tests`` as their own step; passed when the tests ran to their end."""
    if os.name != "posix":
        raise OSError("code_exec runs on Linux and macOS only")
    global _namespaces_work
    linux = sys.platform.startswith("linux")
    if linux:
        reap_leftovers()
    with _uid_slot() if linux and own_uids() else _no_slot() as uid:
        result, fatal = _run(code, tests, limits, linux, uid, _namespaces_work is not False)
        if fatal is None:
            if linux and _namespaces_work is None and "pid" in result.guards:
                _namespaces_work = True
            return result
        if _namespaces_work:  # it was built before: this answer is not run in a weaker one without a word
            return dataclasses.replace(result, stderr=f"sandbox: {fatal}")
        # the namespaces were granted but the sandbox's root could not be built here: say so once (a sweep then
        # refuses unless the project allows the weak sandbox), and run with what is left
        _namespaces_work = False
        _why_no_namespaces.append(fatal)
        return _run(code, tests, limits, linux, uid, False)[0]


_namespaces_work: bool | None = None
"""Whether this machine's kernel let a sandbox be built (None until one was tried)."""
_why_no_namespaces: list[str] = []


@contextmanager
def _no_slot() -> Iterator[None]:
    yield None


@dataclass(frozen=True, slots=True)
class SandboxReport:
    """What code_exec's sandbox holds on this machine: said at start-up and in the run's notes."""

    mechanism: str
    guards: frozenset[str]
    why: str = ""
    """Why the namespaces are missing, when they are."""
    root: bool = True
    """Whether arenatui runs as root."""
    memory_bound: str = ""
    """What bounds a sandbox's memory as a whole ('cgroup v2', 'cgroup v1', 'RSS watchdog'; '' off Linux)."""

    @property
    def missing(self) -> tuple[str, ...]:
        """The guards it lacks; a uid of its own is asked of root only (a user's sandboxes share its uid, each in a
        user namespace of its own)."""
        return tuple(g for g in GUARDS if g not in self.guards and (g != "uid" or self.root))

    @property
    def strong(self) -> bool:
        """Whether answers run in namespaces of their own (PID and mount): what code_exec requires unless the
        project allows the weak sandbox."""
        return "pid" in self.guards and "mount" in self.guards

    def refusal(self) -> str:
        """Why code_exec refuses to run here, and what the person can do."""
        return (f"code_exec cannot build its strong sandbox on this machine ({self.why or self.mechanism}), so "
                f"model-written code would run with {self.mechanism} only, missing "
                + "; ".join(GUARDS[g] for g in self.missing)
                + ". Run where namespaces are allowed (as root, or with unprivileged user namespaces), or set "
                  "[run] allow_weak_sandbox = true to run it this way (the run then records the weak sandbox; see "
                  "README, code_exec)")

    def describe(self) -> str:
        text = f"code_exec sandbox: {self.mechanism}"
        if self.memory_bound:
            text += f", memory_mb per sandbox as a whole by {self.memory_bound}"
        if self.missing:
            text += ("; missing guards: " + "; ".join(GUARDS[g] for g in self.missing)
                     + (f" ({self.why})" if self.why else ""))
        return text


_report: SandboxReport | None = None


def sandbox_report() -> SandboxReport:
    """Run one trivial answer through the sandbox (once per process) and say what guarded it."""
    global _report
    if _report is None:
        if os.name != "posix":
            return SandboxReport("none (code_exec runs on Linux and macOS only)", frozenset())
        r = run_code("", "pass", ExecLimits(timeout_s=30.0))
        why = _why_no_namespaces[-1] if _why_no_namespaces else r.note
        if "pid" in r.guards and "mount" in r.guards:
            how = "namespaces (user, PID, mount, IPC, network) through unshare(2)"
            how += f", as host uid {SANDBOX_UID_BASE}+slot" if "uid" in r.guards else ", as an unprivileged user"
        elif sys.platform.startswith("linux"):
            how = "no namespaces: resource limits, a clean environment" + (
                ", a uid of its own" if "uid" in r.guards else "")
        else:
            how = "no namespaces (not Linux): a clean environment, CPU and memory limits, the timeout"
        _report = SandboxReport(how, r.guards, why, own_uids(), r.memory_bound)
    return _report


def _run(code: str, tests: str, limits: ExecLimits, linux: bool, uid: int | None,
         namespaces: bool) -> tuple[ExecResult, str | None]:
    """One run, and why the sandbox's namespaces could not be built if they could not (else None)."""
    workdir = tempfile.mkdtemp(prefix="arena-exec-")
    t0 = time.monotonic()
    fds: list[int] = []
    cgroup: SandboxCgroup | None = None
    with _in_flight_lock:
        _in_flight[workdir] = None
    try:
        if linux:  # named after this process: a later arenatui removes it if this one is SIGKILLed
            cgroup = make_cgroup(f"{os.getpid()}-{os.path.basename(workdir)}", limits.memory_mb, limits.max_processes)
        for name, text in (("solution.py", code), ("tests.py", tests)):
            with open(os.path.join(workdir, name), "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text + "\n")
        python, drop = sandbox_python()
        if drop and uid is not None:
            for p in (workdir, os.path.join(workdir, "solution.py"), os.path.join(workdir, "tests.py")):
                os.chown(p, uid, uid)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        rep_r, rep_w = os.pipe()
        done_r, done_w = os.pipe()
        fds += [out_r, out_w, err_r, err_w, rep_r, rep_w, done_r, done_w]
        nonce = secrets.token_hex(16)
        token = nonce.encode()
        if linux:
            # without namespaces the interpreter must be one the sandbox uid may run (sandbox_python)
            cfg = {"memory_mb": limits.memory_mb, "file_mb": limits.file_mb, "max_processes": limits.max_processes,
                   "cpu_s": int(limits.timeout_s) + 1, "uid": uid if uid is not None else NOBODY,
                   "tmp_mb": limits.tmp_mb, "drop": drop and uid is not None, "workdir": workdir,
                   "report_fd": rep_w, "done_fd": done_w, "namespaces": namespaces, "python": sys.executable,
                   "fallback_python": python, "python_dirs": _python_dirs(), "harness": _HARNESS,
                   "parent": os.getpid(), "root": own_uids(),
                   "cgroup_procs": cgroup.procs if cgroup is not None else []}
            cmd = [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(cfg)]  # -S: stdlib only, no site start-up
        else:
            cmd = [python, "-I", "-B", "-c", _HARNESS, str(done_w)]
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=out_w, stderr=err_w,
                                start_new_session=True, close_fds=True, pass_fds=(rep_w, done_w))
        with _in_flight_lock:
            _in_flight[workdir] = (proc.pid, uid, cgroup)
        for w in (out_w, err_w, rep_w, done_w):
            os.close(w)
            fds.remove(w)
        assert proc.stdin is not None
        try:
            proc.stdin.write(nonce.encode())
            proc.stdin.close()
        except OSError:
            pass
        for r in (out_r, err_r, rep_r, done_r):
            os.set_blocking(r, False)
        keep = limits.output_kb * 1024
        out: list[bytes] = []
        err: list[bytes] = []
        rep: list[bytes] = []
        done: list[bytes] = []
        kept = {out_r: [0], err_r: [0], rep_r: [0], done_r: [0]}
        cut = [False]
        ignored = [False]
        sinks = {out_r: (out, keep, cut), err_r: (err, keep, cut), rep_r: (rep, 65536, ignored),
                 done_r: (done, 65536, ignored)}
        open_fds = {out_r, err_r, rep_r, done_r}

        def drain(ready: list[int]) -> None:
            for fd in ready:
                buf, limit, flag = sinks[fd]
                if fd == done_r:  # the answer may write here too: keep only the nonce's lines
                    more = _read_some(fd, 1 << 30, buf, kept[fd], flag)
                    *complete, tail = b"".join(buf).split(b"\n")
                    ours = [ln[ln.rfind(token):] + b"\n" for ln in complete if token in ln]
                    buf[:] = [*ours[-4:], tail[-256:]]
                    kept[fd][0] = 0
                else:
                    more = _read_some(fd, limit, buf, kept[fd], flag)
                if not more:
                    open_fds.discard(fd)

        timed_out = too_many = too_big = False
        deadline = t0 + limits.timeout_s
        watchdog = uid is None or not drop
        next_look = t0
        try:
            while True:
                if proc.poll() is not None:
                    break
                now = time.monotonic()
                if now >= deadline:
                    timed_out = True
                    break
                wait = min(0.05, deadline - now)
                if open_fds:
                    ready, _, _ = select.select(list(open_fds), [], [], wait)
                    drain(ready)
                else:
                    time.sleep(wait)
                # RLIMIT_NPROC does not bind root: a watchdog counts the launcher group's processes too; it is what
                # stops a fork loop when the sandbox has neither namespaces nor a uid of its own
                counted = b"guard nproc" in b"".join(rep)
                if watchdog and linux and not counted and group_size(proc.pid) > limits.max_processes:
                    too_many = True
                    break
                # without a cgroup (or one the launcher could not join), the RSS watchdog bounds the whole sandbox
                if linux and now >= next_look and b"guard memory" not in b"".join(rep):
                    next_look = now + WATCHDOG_S
                    if sandbox_rss(proc.pid, uid) > limits.memory_mb * MB:
                        too_big = True
                        break
        finally:
            # Whatever happened (an exception too: Ctrl-C during start-up's probe), nothing of the sandbox outlives
            # the scorer: the launcher's group goes (its namespace with it), and as root every process of its uid.
            if cgroup is not None:
                cgroup.kill()
            _kill_all(proc.pid, uid if linux else None)
            proc.wait()
        drain(list(open_fds))  # what the pipes hold now; never waiting for a writer that is still alive
        stdout = b"".join(out).decode("utf-8", "replace")
        stderr = b"".join(err).decode("utf-8", "replace")
        report = b"".join(rep).decode("utf-8", "replace").splitlines()
        guards = frozenset(ln.split()[1] for ln in report if ln.startswith("guard ") and len(ln.split()) > 1)
        bound = ""
        if linux:  # the cgroup when the launcher joined it, else the watchdog that looked all along
            bound = cgroup.kind if cgroup is not None and "memory" in guards else "RSS watchdog"
            guards |= {"memory"}
        oom = too_big or (cgroup is not None and cgroup.out_of_memory())
        status = [int(ln.split()[1]) for ln in report if ln.startswith("status ")]
        rc = os.waitstatus_to_exitcode(status[-1]) if status else proc.returncode
        fatal = [ln[len("fatal "):] for ln in report if ln.startswith("fatal ")]
        if fatal and namespaces:
            return ExecResult("crashed", None, "", "", False, False, 0.0), fatal[-1]
        notes = [ln.split(" ", 1)[1] for ln in report if ln.startswith(("fallback ", "missing ")) and " " in ln]
        signal_lines = [ln.decode("utf-8", "replace").split(" ") for ln in b"".join(done).split(b"\n")
                        if ln.startswith(token)]
        stage, exc = (signal_lines[-1][1], signal_lines[-1][2]) if signal_lines else ("", "")
        verdict: Verdict
        tail = stderr[-4000:]
        if fatal:
            stderr += "\nsandbox: " + fatal[-1]
            verdict = "crashed"
        elif stage == "done" and rc == 0:
            verdict = "passed"
        elif stage == "done":  # the marker alone is not enough: the tests' process must also have exited 0
            verdict = "crashed"
            stderr += f"\nthe tests ran to their end, but their process exited with code {rc}"
        elif too_many:
            verdict = "crashed"
            stderr += f"\nstopped: more than {limits.max_processes} processes at once"
        elif oom:
            verdict = "memory_limit"
            stderr += (f"\nstopped: the sandbox's processes together passed memory_mb = {limits.memory_mb} "
                       f"({bound})")
        elif timed_out or rc == -signal.SIGXCPU:
            verdict = "timeout"
        elif exc == "MemoryError" or (not stage and "MemoryError" in tail):
            verdict = "memory_limit"
        elif stage == "tests" and exc == "AssertionError":
            verdict = "failed"
        elif stage or rc is None or rc < 0:
            verdict = "crashed"  # the answer or the tests raised, or a signal ended the process
        else:
            verdict = "tests_not_run"
        return ExecResult(verdict, rc, stdout, stderr, cut[0], "net" in guards, time.monotonic() - t0, proc.pid,
                          guards, uid if "uid" in guards else None, "; ".join(notes), workdir, bound), None
    finally:
        if cgroup is not None:
            cgroup.remove()
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(workdir, ignore_errors=True)
        with _in_flight_lock:
            _in_flight.pop(workdir, None)


_in_flight: dict[str, tuple[int, int | None, SandboxCgroup | None] | None] = {}
"""Runs not ended yet: work dir -> (launcher pid, sandbox uid, its cgroup) once started."""
_in_flight_lock = threading.Lock()


@atexit.register
def _end_in_flight() -> None:
    """At exit (Ctrl-C with a run abandoned in its daemon thread), end every sandbox still running and remove its
    work dir: the thread that would have never runs again. (A SIGKILL leaves the work dirs; the launchers die with
    arenatui all the same, by their parent-death signal.)"""
    with _in_flight_lock:
        runs = list(_in_flight.items())
        _in_flight.clear()
    for workdir, started in runs:
        if started is not None:
            pid, uid, cgroup = started
            if cgroup is not None:
                cgroup.remove()
            _kill_all(pid, uid)
        shutil.rmtree(workdir, ignore_errors=True)

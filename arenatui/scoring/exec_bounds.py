"""code_exec's bounds on a sandbox as a whole: a cgroup (v2, else v1) per sandbox, else a watchdog over its RSS.

RLIMIT_AS bounds each process; a sandbox of many processes could hold ``memory_mb`` × ``max_processes`` (measured
before: 833 MB RSS from one sandbox with ``memory_mb = 100``). As root, each sandbox gets a cgroup of its own whose
memory limit is ``memory_mb`` and whose process limit is ``max_processes`` (plus the harness's own few): under cgroup
v2 ``memory.max``/``memory.swap.max``/``pids.max`` in ``/sys/fs/cgroup/arenatui-sandboxes``, under cgroup v1
``memory.limit_in_bytes`` (and ``memsw``) and ``pids.max`` in ``arenatui-sandboxes`` beside arenatui's own cgroups.
Where neither can be made (not root, no controllers), the scorer sums the RSS of the sandbox's processes (the
launcher's descendants and, as root, every process of its uid) about ten times a second and ends the sandbox past
``memory_mb``: a sandbox can overshoot between two looks, never for long.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

MB = 1024 * 1024
HARNESS_PROCESSES = 6
"""Processes of the harness itself (launcher, namespace init, the tests' process, the answer's side, forks between
them) counted by the cgroup's process limit besides the answer's own ``max_processes``."""
CGROUP_DIR = "arenatui-sandboxes"
WATCHDOG_S = 0.1
"""How often the RSS watchdog looks, where no cgroup holds the sandbox."""


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


@dataclass(frozen=True, slots=True)
class _Bases:
    kind: str
    """'cgroup v2' or 'cgroup v1'."""
    memory: str
    """The directory under which a sandbox's memory cgroup is made."""
    pids: str
    """The same for its process limit (the same directory under cgroup v2)."""


def _own_cgroups() -> dict[str, str]:
    """Controller → this process's cgroup path ('' for the cgroup v2 line)."""
    own: dict[str, str] = {}
    for line in _read("/proc/self/cgroup").splitlines():
        hid, ctrls, path = line.split(":", 2)
        for c in ctrls.split(","):
            own["" if hid == "0" else c] = path
    return own


def _find_bases() -> _Bases | None:
    if os.name != "posix" or os.geteuid() != 0:
        return None  # a user's delegated cgroup is not tried
    try:
        own = _own_cgroups()
    except OSError:
        return None
    top = "/sys/fs/cgroup"
    try:
        if {"memory", "pids"} <= set(_read(f"{top}/cgroup.controllers").split()):
            base = f"{top}/{CGROUP_DIR}"
            _write(f"{top}/cgroup.subtree_control", "+memory +pids")
            os.makedirs(base, exist_ok=True)
            _write(f"{base}/cgroup.subtree_control", "+memory +pids")  # no process lives here: children get both
            return _Bases("cgroup v2", base, base)
    except OSError:
        pass
    if "memory" in own and "pids" in own:
        memory = f"{top}/memory{own['memory'].rstrip('/')}/{CGROUP_DIR}"
        pids = f"{top}/pids{own['pids'].rstrip('/')}/{CGROUP_DIR}"
        try:
            for d in (memory, pids):
                os.makedirs(d, exist_ok=True)
            return _Bases("cgroup v1", memory, pids)
        except OSError:
            return None
    return None


_bases: _Bases | bool | None = False
"""Found once per process (False: not looked for yet)."""


def bases() -> _Bases | None:
    global _bases
    if _bases is False:
        _bases = _find_bases()
    assert _bases is not True
    return _bases


@dataclass(frozen=True, slots=True)
class SandboxCgroup:
    """The cgroup(s) of one sandbox: the launcher joins them first thing, so everything it starts is inside."""

    kind: str
    dirs: tuple[str, ...]

    @property
    def procs(self) -> list[str]:
        """The files the launcher writes its pid into."""
        return [f"{d}/cgroup.procs" for d in self.dirs]

    def pids(self) -> list[int]:
        found: list[int] = []
        for d in self.dirs:
            try:
                found += [int(p) for p in _read(f"{d}/cgroup.procs").split()]
            except (OSError, ValueError):
                pass
        return sorted(set(found))

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of it for its memory limit."""
        d = self.dirs[0]
        try:
            if self.kind == "cgroup v2":
                events = _read(f"{d}/memory.events")
                return any(ln.split()[0] == "oom_kill" and int(ln.split()[1]) > 0 for ln in events.splitlines())
            return any(ln.startswith("oom_kill ") and int(ln.split()[1]) > 0
                       for ln in _read(f"{d}/memory.oom_control").splitlines())
        except (OSError, ValueError, IndexError):
            return False

    def kill(self) -> None:
        """Kill every process in it."""
        if self.kind == "cgroup v2":
            try:
                _write(f"{self.dirs[0]}/cgroup.kill", "1")
            except OSError:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def remove(self) -> None:
        """Kill what is left and remove it (an exiting process keeps it busy for a moment)."""
        for _ in range(100):
            self.kill()
            left = False
            for d in self.dirs:
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    pass
                except OSError:
                    left = True
            if not left:
                return
            time.sleep(0.01)


def make_cgroup(name: str, memory_mb: int, max_processes: int) -> SandboxCgroup | None:
    """A cgroup for one sandbox, bounded as a whole; None where none can be made here."""
    b = bases()
    if b is None:
        return None
    made: list[str] = []
    try:
        if b.kind == "cgroup v2":
            d = f"{b.memory}/{name}"
            os.mkdir(d)
            made.append(d)
            _write(f"{d}/memory.max", str(memory_mb * MB))
            if os.path.exists(f"{d}/memory.swap.max"):
                _write(f"{d}/memory.swap.max", "0")
            _write(f"{d}/pids.max", str(max_processes + HARNESS_PROCESSES))
        else:
            m, p = f"{b.memory}/{name}", f"{b.pids}/{name}"
            os.mkdir(m)
            made.append(m)
            os.mkdir(p)
            made.append(p)
            _write(f"{m}/memory.limit_in_bytes", str(memory_mb * MB))
            if os.path.exists(f"{m}/memory.memsw.limit_in_bytes"):
                try:
                    _write(f"{m}/memory.memsw.limit_in_bytes", str(memory_mb * MB))
                except OSError:
                    pass  # swap accounting off: memory.limit_in_bytes still holds
            _write(f"{p}/pids.max", str(max_processes + HARNESS_PROCESSES))
    except OSError:
        SandboxCgroup(b.kind, tuple(made)).remove()
        return None
    return SandboxCgroup(b.kind, tuple(made))


def leftover_cgroups() -> list[SandboxCgroup]:
    """Sandbox cgroups a previous arenatui left (SIGKILLed before it removed them): each one's name holds the pid
    of the arenatui that made it; those whose arenatui is gone are returned."""
    b = bases()
    if b is None:
        return []
    found: list[SandboxCgroup] = []
    try:
        names = os.listdir(b.memory)
    except OSError:
        return []
    for name in names:
        owner = name.split("-")[0]
        if not owner.isdigit() or _alive(int(owner)):
            continue
        dirs = (f"{b.memory}/{name}",) if b.kind == "cgroup v2" else (f"{b.memory}/{name}", f"{b.pids}/{name}")
        found.append(SandboxCgroup(b.kind, tuple(d for d in dirs if os.path.isdir(d))))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sandbox_rss(root_pid: int, uid: int | None) -> int:
    """Bytes of RSS held by the launcher `root_pid`, its descendants and (as root) every process of `uid`."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    owned: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    page = os.sysconf("SC_PAGE_SIZE")
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if uid is not None and os.stat(f"/proc/{name}").st_uid == uid:
                owned.add(int(name))
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 21:
            parent[int(name)] = int(fields[1])
            rss[int(name)] = int(fields[21]) * page
    inside = set(owned) | {root_pid}
    grew = True
    while grew:  # descendants: a few passes over a small table
        grew = False
        for pid, ppid in parent.items():
            if ppid in inside and pid not in inside:
                inside.add(pid)
                grew = True
    return sum(rss.get(p, 0) for p in inside)

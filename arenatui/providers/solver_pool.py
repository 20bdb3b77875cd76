"""Worker processes for ``concurrency = "process"`` solvers: a solver with process-global state runs its trials
in a pool of spawned interpreters, one attempt per worker at a time.

Each worker imports the factory once (by module name, or from its file for a project-local module or a script),
then for each attempt calls the factory with the TrialContext and the solver with the request: both cross as plain
NamedTuples, the answer comes back as one. The parent waits for a worker's pipe to be readable on the event loop,
then reads the reply. A worker that dies mid-call (a segfault, an OOM kill, ``os._exit``) is that call's
``solver_error`` and is replaced by a fresh one for the next call; a call cancelled mid-way (Ctrl-C, a timeout)
kills its worker, since the solver's state is now unknown. Workers ignore SIGINT (a Ctrl-C reaches the whole
process group): the parent stops them, and a worker whose parent vanished sees its pipe close and exits.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import multiprocessing
import numbers
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

import anyio

from arenatui.kernel.errors import RateLimited, SolverFailed, SolverMisuse, TransientError

Target = tuple[str, str | None, str]
"""(module name, its file or None, the factory's qualified name): enough to import the factory in a worker."""

_JOIN_S = 2.0


def factory_target(fn: Any, model_key: str) -> Target:
    """Where a worker finds the factory; SolverMisuse when no worker could (a lambda, a nested function)."""
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None)
    if not module or not name or "<" in name:
        raise SolverMisuse(f"model {model_key!r}: a process solver's factory must be a module-level function or "
                           f"class that a worker process can import; got {name or type(fn).__name__!r}")
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    return module, file, name


def _load(target: Target) -> Any:
    module, file, name = target
    mod: Any = None
    if module == "__main__":
        mod = sys.modules.get("__mp_main__")  # spawn ran the parent's script here as __mp_main__
    if mod is None and not module.startswith("arenatui_user_scorer_") and module != "__main__":
        try:
            mod = importlib.import_module(module)
        except ImportError:
            mod = None
    if mod is None:
        if file is None:
            raise ImportError(f"cannot import {module!r}")
        spec = importlib.util.spec_from_file_location(f"arenatui_solver_{abs(hash(file))}", file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    obj = mod
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _number(v: Any) -> Any:
    """A count or a price as a plain int or float (a numpy number, a Fraction); anything else as it is."""
    if v is None or type(v) in (int, float) or isinstance(v, bool) or not isinstance(v, numbers.Real):
        return v
    return float(v)


def _reply(out: Any) -> tuple[str, Any]:
    """What a worker sends back: plain types only. An object of a class from the solver's module (a str subclass)
    cannot be unpickled in the parent, where that module may not be importable: said as what the solver returned."""
    from arenatui.providers.solver_answer import Answer

    def odd(v: Any) -> str:
        return f"{type(v).__qualname__} (a str subclass: return str(...))" if isinstance(v, str) else \
            type(v).__qualname__

    if type(out) is str:
        return "ok", out
    if isinstance(out, str) or not isinstance(out, Answer):
        return "returned", odd(out)
    if type(out.text) is not str:
        return "returned", f"arenatui.Answer whose text is {odd(out.text)}"
    fields: list[Any] = [_number(v) for v in out[1:]]
    for name, v in zip(Answer._fields[1:], fields, strict=True):
        if v is not None and type(v) not in (int, float, bool):
            return "returned", f"arenatui.Answer whose {name} is {odd(v)}"
    return "ok", Answer(out.text, *fields)


def worker_main(conn: Connection, target: Target) -> None:
    """A worker's life: import the factory once, then answer attempts until told to stop or the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from arenatui.providers.solver_answer import as_answer, summary

    factory: Any = None
    problem: tuple[str, str, str] | None = None
    try:
        factory = _load(target)
    except BaseException as e:  # said on every call: the parent records it per call
        problem = ("error", f"the solver factory could not be imported: {summary(e)}", traceback.format_exc())
    loop = asyncio.new_event_loop()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        if problem is not None:
            conn.send(problem)
            continue
        ctx, req = msg
        try:
            solver = factory(ctx)
            out = solver(req)
            if inspect.isawaitable(out):
                out = loop.run_until_complete(out)
            conn.send(_reply(as_answer(out)))
        except RateLimited as e:
            conn.send(("rate_limited", e.message, e.retry_after))
        except TransientError as e:
            conn.send(("transient", e.message))
        except BaseException as e:
            conn.send(("error", f"the solver raised {summary(e)}", traceback.format_exc()))


class _Worker:
    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    def kill(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        if self.process.is_alive():
            self.process.kill()
        self.process.join(_JOIN_S)


class SolverPool:
    """`size` spawned workers for one model; `await call(ctx, request)` runs one attempt in an idle one."""

    def __init__(self, factory: Any, size: int, model_key: str) -> None:
        self.target = factory_target(factory, model_key)
        self.size = size
        self._mp = multiprocessing.get_context("spawn")
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._slots: anyio.Semaphore | None = None
        self.replaced = 0
        """Workers that died mid-call and were replaced."""

    def _spawn(self) -> _Worker:
        parent, child = self._mp.Pipe()
        p = self._mp.Process(target=worker_main, args=(child, self.target), daemon=True,
                             name="arenatui-solver")
        p.start()
        child.close()
        w = _Worker(p, parent)
        self._all.add(w)
        return w

    def start(self) -> None:
        """Spawn the whole pool now (before the sweep's first call, so its latencies leave spawning out)."""
        while len(self._all) < self.size:
            self._idle.append(self._spawn())

    async def call(self, ctx: Any, request: Any) -> Any:
        if self._slots is None:
            self._slots = anyio.Semaphore(self.size)
        async with self._slots:
            w = self._idle.pop() if self._idle else await anyio.to_thread.run_sync(self._spawn)
            ok = False
            try:
                w.conn.send((ctx, request))
                # readiness on the loop, then a read that finds the reply there (or EOF: the worker died): no thread
                # per call, and a cancelled wait leaves none behind blocked on the pipe
                await anyio.wait_readable(w.conn.fileno())
                try:
                    reply = w.conn.recv()
                except (EOFError, OSError):
                    raise
                except Exception as e:  # a whole message this side cannot unpickle: the worker is fine
                    reply = ("error", f"the solver's answer could not be read back from its worker process "
                                      f"({type(e).__name__}: {e}); return a str or an arenatui.Answer of plain "
                                      "values", "")
                ok = True
            except (EOFError, OSError, BrokenPipeError):
                await anyio.to_thread.run_sync(w.process.join, _JOIN_S)
                self._all.discard(w)
                self.replaced += 1
                raise SolverFailed(f"the worker process running the solver died (exit code {w.process.exitcode}); "
                                   "it is replaced for the next call") from None
            finally:
                if ok:
                    self._idle.append(w)
                elif w in self._all:  # cancelled mid-call: the worker's state is unknown
                    self._all.discard(w)
                    w.kill()
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "returned":
            raise SolverFailed(f"the solver returned {reply[1]}; expected a string or arenatui.Answer")
        if kind == "rate_limited":
            raise RateLimited(reply[1], reply[2])
        if kind == "transient":
            raise TransientError(reply[1])
        raise SolverFailed(reply[1], reply[2])

    async def aclose(self) -> None:
        """Stop every worker: idle ones are asked to exit, the rest are killed; none is left behind."""
        workers = list(self._all)
        self._all.clear()
        self._idle.clear()

        def stop() -> None:
            for w in workers:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            for w in workers:
                w.process.join(_JOIN_S)
                w.kill()

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(stop)

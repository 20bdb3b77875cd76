"""The python provider: a user's solver (a retrieval pipeline, an agent, a chain of calls) under the same engine.

A model with ``provider = "python"`` names a factory (``factory = "module:make_solver"``, or ``solver=`` from
Python). The factory is called once per trial with a `TrialContext` and returns the solver: an async callable (or a
sync one, run in a worker thread) taking a `SolverRequest` and returning the answer as a string or an `Answer`
(with token counts, cost and TTFT when it knows them). One solver per trial, because solvers keep per-trial state
(messages, usage, sessions): a factory that hands out an instance a trial in flight still holds fails the run at
once (`SolverMisuse`) rather than letting two trials share it. Plain functions hold no per-trial state and are
shared freely.

How trials may overlap is the solver's own declaration (``concurrency``):

- ``thread`` (default): no process-global state; trials overlap freely in this process.
- ``process``: keeps process-global state; each attempt runs in a worker process from a pool of ``processes``
  (spawned: arenatui.providers.solver_pool), so trials overlap up to the pool's size.
- ``serial``: never overlaps anything: one call at a time across every serial solver of the run.

Errors: `arenatui.RateLimited` (retry_after) and `arenatui.Transient` get the retry policy of an HTTP 429 or 5xx;
anything else a solver raises is that call's ``solver_error`` (never retried), with a one-line summary as its
message and the traceback as its detail.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import numbers
import time
import traceback
import types
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import anyio
from anyio.lowlevel import RunVar

from arenatui.config.schema import ModelConfig, RunSettings
from arenatui.kernel.errors import ProviderError, SolverFailed, SolverMisuse
from arenatui.kernel.threads import in_daemon_thread
from arenatui.providers.base import MAX_ANSWER_CHARS, Completion, Request, capped, estimate_tokens, usage_count
from arenatui.providers.solver_answer import Answer, as_answer, summary


class TrialContext(NamedTuple):
    """What the factory is told about the trial its solver will answer."""

    run_id: str
    model_key: str
    case_id: str
    trial_index: int
    seed: int
    """A seed of this trial's own (from the run's seed, the model, the case and the trial): the same on resume."""


class SolverRequest(NamedTuple):
    """One attempt's request, as a solver sees it."""

    input: str | tuple[dict[str, str], ...]
    """The case's input (a prompt or chat messages), ``{output:ID}`` already replaced in a chained case, as its prompt
    variant's template puts it (``[[prompts]]``); a repair turn's conversation is in `messages`."""
    messages: tuple[dict[str, str], ...]
    """The input as chat messages, the system prompt first when there is one."""
    max_tokens: int
    temperature: float
    system: str | None
    case_id: str
    trial: int
    attempt: int


Solver = Callable[[SolverRequest], "Awaitable[str | Answer] | str | Answer"]
Factory = Callable[[TrialContext], Solver]

_SERIAL: RunVar[anyio.Lock] = RunVar("arenatui_serial_solvers")
"""The one lock every ``serial`` solver of a run holds while it works (per event loop, so per run)."""


def serial_lock() -> anyio.Lock:
    try:
        return _SERIAL.get()
    except LookupError:
        lock = anyio.Lock()
        _SERIAL.set(lock)
        return lock


def trial_seed(seed: int, model_key: str, case_id: str, trial: int) -> int:
    digest = hashlib.blake2b(f"{seed}|{model_key}|{case_id}|{trial}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def is_shared_solver(obj: object) -> bool:
    """Whether `solver=` was given a solver itself rather than a factory: an async function (a solver, holding
    no per-trial state) or a callable object that is not a function or class (an instance, holding state)."""
    if inspect.isclass(obj):
        return False
    if _is_async(obj):
        return True
    return not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType))


def holds_state(obj: object) -> bool:
    """Whether a solver can carry per-trial state: anything but a plain function (a bound method is its object)."""
    return not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))


def _is_async(obj: object) -> bool:
    if inspect.iscoroutinefunction(obj):
        return True
    if isinstance(obj, type):
        return False
    for k in type(obj).__mro__:  # an object whose class defines `async def __call__`
        call = vars(k).get("__call__")
        if call is not None:
            return inspect.iscoroutinefunction(call)
    return False


def solver_failed(e: BaseException, where: str = "the solver") -> SolverFailed:
    return SolverFailed(f"{where} raised {summary(e)}", "".join(traceback.format_exception(e)))


def completion(out: object, request: SolverRequest, started: float, cap: int = MAX_ANSWER_CHARS) -> Completion:
    """A solver's return value as a Completion (its text held to `cap` characters), or SolverFailed saying what it
    returned instead."""
    if isinstance(out, str):
        return capped(Completion(out, _prompt_tokens(request), estimate_tokens(out), "stop", None, True), cap)
    out = as_answer(out)
    if isinstance(out, Answer) and isinstance(out.text, str):
        # the checks HTTP usage gets (usage_count): a count that is no sane whole number is estimated, and marked
        given_in, given_out = usage_count(out.input_tokens), usage_count(out.output_tokens)
        estimated = given_in is None or given_out is None
        return capped(Completion(out.text, _prompt_tokens(request) if given_in is None else given_in,
                                 estimate_tokens(out.text) if given_out is None else given_out,
                                 "stop", out.ttft_s, estimated, None, None, _cost(out.cost)), cap)
    raise SolverFailed(f"the solver returned {type(out).__name__}; expected a string or arenatui.Answer")


def _cost(cost: object) -> float | None:
    """The spend a solver reported, in dollars; SolverFailed naming it when it is no finite number >= 0 (NaN could
    never be stored, so the call came back on every resume; infinity or a negative sum made the run's spend one)."""
    if cost is None:
        return None
    if isinstance(cost, bool) or not isinstance(cost, numbers.Real) or not 0.0 <= float(cost) < math.inf:
        raise SolverFailed(f"the solver reported cost={cost!r}; expected a finite number of dollars, 0 or more")
    return float(cost) or None


def _prompt_tokens(request: SolverRequest) -> int:
    return estimate_tokens("".join(m.get("content", "") for m in request.messages))


def solver_request(request: Request) -> SolverRequest:
    case = request.case
    # a judge call (the solver judges an llm_judge scorer's cases): its input is the rubric filled in, not the case's
    text = case.input if request.judge is None else request.messages[-1]["content"]
    variant = request.model.variant
    if variant is not None and request.judge is None:  # a prompt variant's lane: the case as the variant asks it
        text = variant.applied(case.input)
    elif not isinstance(text, str):  # the case's own chat messages: this solver's copy (see build_messages)
        text = tuple(m.copy() for m in text)
    return SolverRequest(text, request.messages, request.max_tokens, request.temperature, request.system,
                         case.id, request.trial, request.attempt)


class SolverProvider:
    """One python model: its factory called once per trial, its solver awaited (or run in a thread, or in a worker
    process), its exceptions turned into the engine's error classes."""

    enforces_timeout = True
    """It ends an attempt at `request.timeout_s` itself: on asyncio with `asyncio.timeout`, a third of the cost of
    the engine's anyio cancel scope per call (benchmarks/solver_overhead.py), elsewhere with anyio's."""

    def __init__(self, model: ModelConfig, run: RunSettings) -> None:
        if model.solver is None:
            raise SolverMisuse(f"model {model.key!r}: a python model needs a solver factory (factory = "
                               "'module:make_solver', or solver= from Python)")
        self.model = model
        self.run_id = ""
        """Set by the sweep once the run is recorded (the factory's TrialContext carries it)."""
        self._seed = run.seed
        self._last_attempt = run.max_attempts
        self._max_chars = run.max_answer_chars or MAX_ANSWER_CHARS
        given = model.solver
        self._factory: Callable[[TrialContext], Any] = (lambda _ctx: given) if is_shared_solver(given) else given
        self._trials: dict[tuple[str, int], Any] = {}
        """(case id, trial) -> its solver, from its first attempt until it ends (retries reuse it)."""
        self._holders: dict[int, tuple[str, int]] = {}
        """id() of each stateful solver a trial holds -> that trial: a second trial given one fails the run."""
        self._serial = model.concurrency == "serial"
        self._pool: Any = None
        if model.concurrency == "process":
            from arenatui.providers.solver_pool import SolverPool

            self._pool = SolverPool(model.solver, model.processes, model.key)

    def bind_run(self, run_id: str) -> None:
        self.run_id = run_id

    def prepare(self) -> None:
        if self._pool is not None:
            self._pool.start()

    def context(self, case_id: str, trial: int) -> TrialContext:
        return TrialContext(self.run_id, self.model.key, case_id, trial,
                            trial_seed(self._seed, self.model.key, case_id, trial))

    async def complete(self, request: Request) -> Completion:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # trio
            with anyio.fail_after(request.timeout_s):
                return await self._complete(request)
        async with asyncio.timeout(request.timeout_s):
            return await self._complete(request)

    async def _complete(self, request: Request) -> Completion:
        sreq = solver_request(request)
        started = time.monotonic()
        if self._pool is not None:
            return completion(await self._pool.call(self.context(sreq.case_id, sreq.trial), sreq), sreq, started,
                              self._max_chars)
        key = (sreq.case_id, sreq.trial)
        solver = self._trials.get(key)
        if solver is None:
            solver = self._solver_for(key)
        ended = True
        try:
            if self._serial:
                async with serial_lock():
                    out = await self._call(solver, sreq)
            else:
                out = await self._call(solver, sreq)
            return completion(out, sreq, started, self._max_chars)
        except ProviderError as e:
            # RateLimited and Transient are retried with this trial's solver, unless this was its last attempt
            ended = isinstance(e, SolverFailed) or sreq.attempt >= self._last_attempt
            raise
        except anyio.get_cancelled_exc_class():
            ended = sreq.attempt >= self._last_attempt  # a timeout is retried: the trial goes on
            raise
        finally:
            if ended:
                self._end(key, solver)

    def _solver_for(self, key: tuple[str, int]) -> Any:
        try:
            solver = self._factory(self.context(*key))
        except Exception as e:
            raise solver_failed(e, "the solver factory") from None
        if not callable(solver):
            raise SolverMisuse(f"model {self.model.key!r}: the solver factory returned {type(solver).__name__}, not "
                               "a solver: solver= (or factory) takes a function called once per trial that returns "
                               "the solver (an async function given as solver= is taken as the solver itself)")
        if holds_state(solver):
            owner = getattr(solver, "__self__", solver)
            other = self._holders.get(id(owner))
            if other is not None and other != key:
                raise SolverMisuse(
                    f"model {self.model.key!r}: the solver factory returned the instance that trial {other[1]} of "
                    f"case {other[0]!r} is still using, for trial {key[1]} of case {key[0]!r}: trials running at once "
                    "must not share a solver (its state would mix). Return a new solver from the factory each time, "
                    "or run at concurrency 1")
            self._holders[id(owner)] = key
        self._trials[key] = solver
        return solver

    def _end(self, key: tuple[str, int], solver: Any) -> None:
        self._trials.pop(key, None)
        owner = getattr(solver, "__self__", solver)
        if self._holders.get(id(owner)) == key:
            del self._holders[id(owner)]

    async def _call(self, solver: Any, sreq: SolverRequest) -> Any:
        try:
            if _is_async(solver):
                return await solver(sreq)
            out = await in_daemon_thread(solver, sreq)
            if inspect.isawaitable(out):
                out = await out
            return out
        except (ProviderError, SolverMisuse, anyio.get_cancelled_exc_class()):
            raise
        except Exception as e:
            raise solver_failed(e) from None

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

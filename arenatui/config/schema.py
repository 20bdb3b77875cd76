"""The validated shape of a project: frozen dataclasses that every other layer reads."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenatui.kernel.events import JUDGE_LANE_PREFIX as JUDGE_LANE_PREFIX  # the vocabulary's; re-exported
from arenatui.kernel.events import VARIANT_SEP as VARIANT_SEP

SOLVER_CONCURRENCY: tuple[str, ...] = ("thread", "process", "serial")
"""How a python solver may overlap (arenatui.providers.solver): freely in-process, one trial per worker process,
or never."""
TRANSPORTS: tuple[str, ...] = ("auto", "httpx", "aiohttp")
TOKEN_LIMIT_PARAMS: tuple[str, ...] = ("max_tokens", "max_completion_tokens")
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high")
MIN_THINKING_BUDGET = 1024
"""Anthropic's smallest extended-thinking budget."""
"""HTTP clients a model may use (arenatui.providers.transports says why there are two)."""
OUTPUT_REF = re.compile(r"\{output:([^{}]+)\}")
"""``{output:ID}`` in a chained case's input: the answer of case ID (same model, same trial)."""


@dataclass(frozen=True, slots=True)
class Defaults:
    """Request settings every model inherits unless it overrides them."""

    max_tokens: int = 256
    temperature: float = 0.0
    system: str | None = None


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How the engine runs a sweep."""

    concurrency: int = 4
    """Global number of calls in flight; changeable while the sweep runs."""
    timeout_s: float = 120.0
    """Ceiling on one attempt, from request to last byte."""
    max_attempts: int = 5
    """Attempts per call, the first included. Terminal errors always stop after one."""
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_budget_s: float = 600.0
    """Longest time one call may spend, attempts and sleeps together; a retry-after past it ends the call."""
    trials: int = 1
    seed: int = 0
    keep_sealed_outputs: bool = False
    """Store a sealed case's output in full; by default only its SHA-256 and length are kept (the score always is)."""
    allow_code_exec: bool = False
    """Whether code_exec scorers may run model-written code on this machine (off unless the project says so)."""
    allow_weak_sandbox: bool = False
    """Whether code_exec may run answers where its strong sandbox (namespaces) cannot be built: off, it refuses."""
    max_concurrency_per_case: int | None = None
    """Most trials of one case one model may have under way at once (None: no limit); 1 serialises the trials of a
    case that share server-side state."""
    repair: Repair | None = None
    """Follow-up turns for answers that failed in a repairable way (None: an answer is final)."""
    max_answer_chars: int | None = None
    """The most characters of one response kept (None: providers.base.MAX_ANSWER_CHARS, 4,000,000); a longer answer
    is cut there and marked with its real size (finish_reason 'answer_cap')."""


REPAIRABLE: tuple[str, ...] = ("invalid_format", "refusal", "empty", "truncated", "wrong_answer", "wrong_language")
"""Failure modes (arenatui.scoring.failure_modes) a repair turn may be asked for: a scored answer's, never an
error's (a rate limit or timeout is the retry policy's)."""


@dataclass(frozen=True, slots=True)
class Repair:
    """``[run] repair = {...}``: an answer that failed in one of `on` is sent back to the same model as a follow-up
    turn holding `message` with ``{error}`` replaced by the scorer's word on it, up to `attempts` times."""

    attempts: int = 1
    on: tuple[str, ...] = ("invalid_format", "refusal", "empty")
    message: str = "Your answer could not be used: {error}. Answer again, correcting this."

    def text(self, error: str) -> str:
        return self.message.replace("{error}", error)


@dataclass(frozen=True, slots=True)
class PromptVariant:
    """``[[prompts]]``: one way of asking the cases. `template` holds ``{input}`` (the case's prompt, or the content
    of a chat case's last user message); `system` replaces the model's and the project's system prompt."""

    name: str
    system: str | None = None
    template: str | None = None

    def applied(self, given: str | tuple[dict[str, str], ...]) -> str | tuple[dict[str, str], ...]:
        """A case's input as this variant asks it (a chat case keeps its messages; its own system message wins).
        Builds no Case: it runs once per call."""
        tpl = self.template
        if isinstance(given, str):
            return given if tpl is None else tpl.replace("{input}", given)
        msgs = [dict(m) for m in given]
        if tpl is not None:
            last = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=None)
            if last is not None:
                msgs[last]["content"] = tpl.replace("{input}", msgs[last].get("content", ""))
        if self.system is not None and not any(m.get("role") == "system" for m in msgs):
            msgs.insert(0, {"role": "system", "content": self.system})
        return tuple(msgs)


@dataclass(frozen=True, slots=True)
class SimSettings:
    """Behaviour of a simulated model; the same knobs drive the mock HTTP server."""

    base_latency_s: float = 0.05
    per_token_s: float = 0.0005
    jitter: float = 0.25
    """Sigma of the lognormal factor applied to each attempt's latency (0 = exact)."""
    output_tokens: int = 64
    """Mean output tokens per answer, capped by max_tokens."""
    wrong_tokens: int | None = None
    """Mean output tokens of a wrong answer, when it differs: a model that does not know the answer rambles on
    (until max_tokens, if that comes first). The demo uses it to show what too generous a limit costs."""
    rpm: float | None = None
    """Provider-side requests per minute; past it the model answers rate-limited with retry-after."""
    burst: float | None = None
    """Token-bucket depth for ``rpm``; defaults to one second of requests (at least 1)."""
    reject_cost: float = 0.25
    """Share of a request that a refused request still consumes from the rate limit. Some providers
    count refused requests in full (1.0: retry storms then collapse throughput); 0.25 gives the
    gentle slow-down past the optimum that most hosted APIs show."""
    max_concurrent: int | None = None
    """Provider-side ceiling of simultaneous requests; past it the model answers rate-limited."""
    transient_rate: float = 0.0
    """Chance that an attempt fails with a transient (5xx-like) error."""
    serial: bool = False
    """Local-GPU mode: one request at a time, the rest queue inside the provider."""
    exact_timing: bool = False
    """Every answer has exactly ``output_tokens`` tokens and its first token at ``base_latency_s``: with
    ``jitter = 0`` latency and TTFT are known exactly (benchmarks/http_overhead.py measures against them)."""
    accuracy: float = 0.8
    strata_accuracy: dict[str, float] = field(default_factory=dict)
    """Accuracy by stratum or tag, overriding ``accuracy`` (first match: stratum, then tags)."""
    prompt_accuracy: dict[str, float] = field(default_factory=dict)
    """Accuracy under each prompt variant (``[[prompts]]`` name), overriding ``accuracy`` (a stratum's wins)."""
    reasoning_tokens: int = 0
    """A reasoning model: tokens it thinks before each answer (streamed as reasoning, counted in the output
    tokens and against max_tokens: a limit they use up ends the answer before it starts)."""
    reasoning_per_token_s: float | None = None
    """Seconds per reasoning token (None: ``per_token_s``): the gap between the first token and the answer's."""
    declare_limits: bool = False
    """Every answer and refusal states ``rpm`` and what is left of it, as a hosted API's rate-limit headers do
    (the runner passes them on as LimitsDeclared)."""
    declared_rpm: float | None = None
    """The requests/min the answers state instead of ``rpm``, true or not (headers that lie, for tests)."""
    declared_tpm: float | None = None
    """The tokens/min the answers state (the simulated model has no token limit: a figure for the tuner's prior)."""

    def declares(self) -> bool:
        """Whether answers state rate limits at all."""
        return self.declare_limits or self.declared_rpm is not None or self.declared_tpm is not None

    def reasoning_s(self) -> float:
        """Seconds a whole reasoning phase takes (before jitter)."""
        per = self.per_token_s if self.reasoning_per_token_s is None else self.reasoning_per_token_s
        return self.reasoning_tokens * per

    def mean_latency_s(self, output_tokens: int | None = None) -> float:
        tokens = self.output_tokens if output_tokens is None else output_tokens
        # E[lognormal(0, sigma)] = exp(sigma^2 / 2)
        import math

        return (self.base_latency_s + self.reasoning_s() + tokens * self.per_token_s) * math.exp(self.jitter**2 / 2)

    def ideal_concurrency(self, output_tokens: int | None = None) -> float:
        """Concurrency that saturates the provider without tipping into 429s (Little's law)."""
        if self.serial:
            return 1.0
        limits: list[float] = []
        if self.rpm is not None:
            limits.append(self.rpm / 60.0 * self.mean_latency_s(output_tokens))
        if self.max_concurrent is not None:
            limits.append(float(self.max_concurrent))
        return max(1.0, min(limits)) if limits else float("inf")


@dataclass(frozen=True, slots=True)
class Terms:
    """A provider's terms for one model (``[[models]] terms = {...}``): None is unknown, never assumed."""

    retention_days: float | None = None
    """How long the provider keeps submitted data (0: not kept)."""
    trains_on_data: bool | None = None
    region: str | None = None
    """Where requests are processed ("us", "eu", ...)."""
    deprecation_notice_days: float | None = None
    """The notice the provider gives before retiring the model."""
    source: str | None = None
    """Where the terms were read (a URL or a note)."""
    checked: str | None = None
    """When they were read (a date, as written)."""


@dataclass(frozen=True, slots=True)
class Requirements:
    """``[requirements]``: what a candidate's terms must meet; None sets no requirement."""

    max_retention_days: float | None = None
    trains_on_data: bool | None = None
    """false: a provider that trains on submitted data is eliminated."""
    regions: tuple[str, ...] = ()
    """Regions processing may happen in (empty: any)."""
    min_deprecation_notice_days: float | None = None


@dataclass(frozen=True, slots=True)
class BakeoffSettings:
    """``[bakeoff]``: the load a bake-off judges candidates at (the rate, or the concurrency, of production)."""

    target_rate: float | None = None
    """Requests per second: the load run's segment at this rate is the one reported."""
    target_concurrency: float | None = None
    """Requests in flight: the first segment whose in-flight (achieved rate × median latency) reaches it."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One model of a project: ``[[models]]`` in TOML, or ``arenatui.Model(...)`` from Python."""

    key: str
    provider: str = "sim"
    """A registered provider's name (arenatui.providers.registry): sim, openai, anthropic, python, or one added
    there. Set to "python" by itself when ``solver`` is given."""
    model: str = ""
    """The provider's model name; empty means the key."""
    base_url: str | None = None
    api_key_env: str | None = None
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    max_concurrency: int | None = None
    """Client-side cap on this model's calls in flight."""
    rpm: float | None = None
    """Client-side requests-per-minute limit."""
    tpm: float | None = None
    """Client-side tokens-per-minute limit (input estimate + max_tokens per request)."""
    max_tokens: int | None = None
    temperature: float | None = None
    omit_temperature: bool = False
    """Send no temperature at all (``temperature = "omit"`` in TOML): reasoning models refuse any but their own."""
    token_limit_param: str | None = None
    """The request key that carries max_tokens on an OpenAI-compatible API: "max_tokens" or "max_completion_tokens"
    (TOKEN_LIMIT_PARAMS); None: chosen by the provider (arenatui.providers.openai.token_limit_param)."""
    reasoning_effort: str | None = None
    """OpenAI-compatible reasoning models: how hard to think (REASONING_EFFORTS), sent as ``reasoning_effort``."""
    thinking_budget: int | None = None
    """Anthropic: extended thinking with this many tokens at most (``thinking = {budget_tokens = N}``)."""
    system: str | None = None
    stream: bool = True
    transport: str = "auto"
    """HTTP client for openai/anthropic models: 'auto' (aiohttp on asyncio, else httpx), 'aiohttp' or 'httpx'."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra request headers. Stored with a run by name only (values redacted); resume reads them again from
    the project file."""
    headers_env: dict[str, str] = field(default_factory=dict)
    """Header name -> NAME of the environment variable holding its value (credential headers: X-Goog-Api-Key,
    Cookie, ...); like api_key_env, only the names are ever stored."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    sim: SimSettings = field(default_factory=SimSettings)
    candidate: bool = True
    """Whether the sweep asks this model the cases. A model named as an llm_judge scorer's ``judge`` is only a
    judge unless the project sets ``candidate = true`` on it."""
    factory: str | None = None
    """python: ``module:make_solver``, called once per trial with a TrialContext, returning the solver."""
    solver: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """python, from Python: the factory itself (or, at concurrency 1, one solver shared by every trial). The loader
    puts the function named by ``factory`` here."""
    concurrency: str = "thread"
    """python: how the solver may overlap: "thread" (freely, in this process), "process" (each trial in a worker
    process: up to ``processes`` at once), "serial" (one call at a time in the whole run)."""
    processes: int = 1
    """python with concurrency = "process": the size of its pool of worker processes."""
    prompts: tuple[str, ...] = ()
    """The ``[[prompts]]`` variants this model is asked with (empty: the project's list)."""
    escalate_to: str | None = None
    """The model a case this one still fails (after any repairs) is sent to."""
    variant: PromptVariant | None = field(default=None, compare=False)
    """Set by the plan on a lane of a model with prompt variants (its key is then ``model · variant``)."""

    @property
    def base_key(self) -> str:
        """The project's key of the model (a variant lane's key names its variant too)."""
        return self.key if self.variant is None else self.key.partition(VARIANT_SEP)[0]
    terms: Terms | None = None
    """The provider's terms (retention, training, region, deprecation notice) for a bake-off; None: not written."""

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", self.key)
        if self.solver is not None and self.provider == "sim":
            object.__setattr__(self, "provider", "python")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.price_in_per_mtok + output_tokens * self.price_out_per_mtok) / 1e6


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    input: str | tuple[dict[str, str], ...]
    """A prompt, or chat messages ({"role", "content"})."""
    expected: str | None = None
    tags: tuple[str, ...] = ()
    stratum: str | None = None
    sealed: bool = False
    """Held-out case: its input and expected answer are never shown or exported, only its score."""
    scorer: str | None = None
    tests: str | None = None
    """code_exec: Python run after the model's code; the case passes when it exits cleanly (asserts hold)."""
    language: str | None = None
    """The language the answer should be in (ISO 639-1, e.g. "fr"): an answer plainly in another one is
    the failure mode wrong_language."""
    cluster: str | None = None
    """Cases that share a passage or a template share a cluster: intervals then resample clusters, not cases."""
    depends_on: tuple[str, ...] = ()
    """Cases whose answers this one's input uses (``{output:ID}``): it runs once they passed, for the same model
    and trial, and is stored 'unreachable' when one of them did not."""
    judge_expected: tuple[tuple[str, str], ...] = ()
    """llm_judge: answers with known verdicts, (answer, verdict) pairs ("PASS"/"FAIL" or a number on the scale),
    on which `arena judge-check` measures how often the judge agrees."""

    def prompt_text(self) -> str:
        if isinstance(self.input, str):
            return self.input
        return "\n".join(m.get("content", "") for m in self.input)


@dataclass(frozen=True, slots=True)
class ScorerConfig:
    name: str
    kind: str
    """A registered scorer kind (arenatui.scoring.registry): exact, contains, regex, choice, numeric, json_valid,
    json_schema, f1, python, code_exec, llm_judge, or one added there."""
    pattern: str | None = None
    """regex: the pattern the output must match (``{expected}`` is replaced, escaped)."""
    choices: tuple[str, ...] = ("A", "B", "C", "D")
    """choice: the labels to extract from the output."""
    tolerance: float = 1e-6
    """numeric: absolute tolerance."""
    case_sensitive: bool = False
    schema: dict[str, Any] | None = None
    """json_schema: the JSON Schema the answer must validate against (``schema_file`` is read into it)."""
    labels: tuple[str, ...] = ()
    """f1: the label set of a classification task."""
    function: str | None = None
    """python: ``package.module:function`` taking (case, output) and returning a float, bool or Score."""
    timeout_s: float = 10.0
    """code_exec: wall clock for one run of the model's code with the case's tests; python: the longest one call of
    the function is waited for (past it the call is that answer's scoring error)."""
    memory_mb: int = 512
    """code_exec: address-space limit of the process running the code."""
    judge: str | None = None
    """llm_judge: the key of the [[models]] entry that judges."""
    rubric: str | None = None
    """llm_judge: the judge's prompt; ``{input}``, ``{expected}`` and ``{output}`` are replaced literally."""
    scale: str = "pass/fail"
    """llm_judge: how the verdict reads: "pass/fail", or a whole-number range "LO-HI" such as "1-5"."""
    verdict: str | None = None
    """llm_judge: a regular expression whose group 1 (else whole match) is the verdict token in the judge's answer;
    without it the last 'score: N' (or a bare number) / the last PASS or FAIL is read."""
    pass_at: float | None = None
    """llm_judge with a numeric scale: the lowest verdict that passes (default: the top quarter of the range)."""
    sample: float = 1.0
    """llm_judge: which of its cases are judged: a share in (0, 1] or, from 1 up and whole, a number of cases.
    The same cases for every model (a deterministic rank), so paired comparisons stay paired."""
    options: dict[str, Any] = field(default_factory=dict)
    """A kind added through the registry: its own settings, as its `read` checked them."""

    def scale_range(self) -> tuple[int, int] | None:
        """The numeric scale (lo, hi), or None for pass/fail."""
        if self.scale == "pass/fail":
            return None
        lo, _, hi = self.scale.partition("-")
        return int(lo), int(hi)

    def passing_verdict(self) -> float:
        """The lowest numeric verdict that passes."""
        rng = self.scale_range()
        assert rng is not None
        lo, hi = rng
        if self.pass_at is not None:
            return self.pass_at
        import math

        return lo + math.ceil(0.75 * (hi - lo))


MOCK_FAULTS: tuple[str, ...] = (
    "400", "401", "403", "404", "408", "409", "422", "429", "500", "503", "529",
    "reset", "malformed", "truncated", "interrupted", "hang", "trickle",
)
RETRY_AFTER_FORMS: tuple[str, ...] = ("both", "ms", "seconds", "date", "llm_provider", "openai_reset",
                                      "anthropic_reset", "none")


@dataclass(frozen=True, slots=True)
class MockFaults:
    """How `arena mock-server` misbehaves for one model (``[mock.models.KEY]``); the project's sweep ignores it."""

    faults: tuple[str, ...] = ()
    """Faults to inject (MOCK_FAULTS): an HTTP status, or reset, malformed, truncated, interrupted (a stream broken
    off as llama-cpp-python's server does when another request arrives: its opening, then its end marker, no
    finish reason), hang, trickle."""
    rate: float = 1.0
    """Share of requests that get one of ``faults`` (picked uniformly)."""
    retry_after: str = "both"
    """How a 429 states its delay: ``retry-after-ms`` (ms), ``Retry-After`` seconds, an HTTP date, ms + seconds, a
    gateway's ``llm_provider-retry-after``, OpenAI's ``x-ratelimit-reset-requests`` duration, Anthropic's
    ``anthropic-ratelimit-requests-reset`` time, or ``none`` (no hint at all)."""
    retry_after_s: float = 1.0
    """The delay an injected 429 asks for."""
    echo_headers: bool = False
    """Error bodies repeat the request's headers (to prove that clients scrub secrets)."""
    trickle_s: float = 0.2
    """Seconds between the bytes of a trickled answer."""
    single_slot: bool = False
    """One request at a time, and a stream in progress broken off (as ``interrupted``) as soon as another request
    waits: llama-cpp-python's server with its default ``interrupt_requests``."""
    declare_limits: bool = False
    """Every response states the model's rate limits in headers (``x-ratelimit-*`` on the OpenAI wire,
    ``anthropic-ratelimit-*`` on Anthropic's): its ``sim.rpm`` and what is left of it, unless declared_* say
    otherwise."""
    declared_rpm: float | None = None
    """Requests per minute the headers state, true or not (a lie, for tests: evidence must win over it)."""
    declared_tpm: float | None = None
    """Tokens per minute the headers state (the simulated model enforces none)."""


@dataclass(frozen=True, slots=True)
class Project:
    """A whole project: what the TOML loader produces, or ``arenatui.Project(...)`` built in Python."""

    name: str
    path: Path = field(default_factory=lambda: Path.cwd() / "arena.toml")
    """The TOML file the project came from (for error messages and relative paths; a project built in Python
    defaults to arena.toml in the working directory, whether or not there is one)."""
    defaults: Defaults = field(default_factory=Defaults)
    run: RunSettings = field(default_factory=RunSettings)
    models: tuple[ModelConfig, ...] = ()
    cases: tuple[Case, ...] = ()
    scorers: tuple[ScorerConfig, ...] = ()
    theme: str | None = None
    mock: dict[str, MockFaults] = field(default_factory=dict)
    """Fault injection for `arena mock-server`, by model key."""
    strata_weights: dict[str, float] = field(default_factory=dict)
    """[strata] weights: each stratum's share in production; the leaderboard shows the reweighted score too."""
    prompts: tuple[PromptVariant, ...] = ()
    """``[[prompts]]``: the ways of asking the cases (none: each case as written)."""
    prompt_names: tuple[str, ...] = ()
    """``[project] prompts``: the variants every model is asked with unless it names its own (empty: all)."""

    def variants_of(self, model: ModelConfig) -> tuple[PromptVariant, ...]:
        """The prompt variants a model is asked with, in the order named (none when the project has none)."""
        names = model.prompts or self.prompt_names
        if not names:
            return self.prompts
        by_name = {p.name: p for p in self.prompts}
        return tuple(by_name[n] for n in names if n in by_name)
    requirements: Requirements | None = None
    """[requirements]: terms a bake-off candidate must meet (arenatui.bakeoff.terms)."""
    bakeoff: BakeoffSettings = field(default_factory=BakeoffSettings)

    def model(self, key: str) -> ModelConfig:
        for m in self.models:
            if m.key == key:
                return m
        raise KeyError(key)

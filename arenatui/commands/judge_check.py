"""`arena judge-check`: how often a project's judge agrees with verdicts known in advance, before a run relies on it.

Cases list answers whose right verdict is known (``judge_expected = [{answer = "...", verdict = "PASS"}]``); each
is sent to the case's llm_judge exactly as a sweep would send it (the same rubric, system prompt, limits of one
call, retries of rate-limited and transient errors), and the verdict is read by the same rules. Agreement is on
pass/fail (a numeric verdict passes from the scorer's ``pass_at``), with a Wilson score interval over the answers
the judge gave a verdict on; "same verdict" counts exact agreement on a numeric scale. A judge that fails (its call
errs, its answer has no verdict line or two different ones) is shown as the judge's error, never counted as a
disagreement: it is a reliability problem of the judge's own.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arenatui.stats.proportions import Z95
from arenatui.stats.proportions import wilson_interval as proportion_interval

if TYPE_CHECKING:
    from rich.console import Console

    from arenatui.config.schema import Case, ModelConfig, Project, ScorerConfig
    from arenatui.providers.base import Provider


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """A judge's agreement interval (`stats.proportions`); with no answers at all, the whole of [0, 1]."""
    return proportion_interval(k, n, z) or (0.0, 1.0)


@dataclass(frozen=True, slots=True)
class KnownVerdict:
    """One answer with a known verdict, and what the judge made of it."""

    case_id: str
    index: int
    """Which of the case's judge_expected answers (0-based)."""
    expected: str
    """"PASS", "FAIL" or a number on the scale, as the case says."""
    got: str | None
    """The judge's verdict in the same form, or None when it gave none."""
    agrees: bool | None
    """Pass/fail agreement; None when the judge gave no verdict."""
    judge_error: str | None = None
    """Why the judge gave no verdict (its call failed, its answer was unreadable or ambiguous)."""
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeCheck:
    """One llm_judge scorer's check: its judge's verdicts on the known ones."""

    scorer: str
    judge: str
    scale: str
    verdicts: tuple[KnownVerdict, ...]

    @property
    def judged(self) -> tuple[KnownVerdict, ...]:
        return tuple(v for v in self.verdicts if v.agrees is not None)

    @property
    def n(self) -> int:
        return len(self.judged)

    @property
    def agreed(self) -> int:
        return sum(1 for v in self.judged if v.agrees)

    @property
    def same(self) -> int:
        return sum(1 for v in self.judged if v.got == v.expected)

    @property
    def errors(self) -> tuple[KnownVerdict, ...]:
        return tuple(v for v in self.verdicts if v.agrees is None)

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.agreed, self.n)


def _passes(cfg: ScorerConfig, verdict: str) -> bool:
    return verdict == "PASS" if cfg.scale_range() is None else float(verdict) >= cfg.passing_verdict()


async def _ask(provider: Provider, judge: ModelConfig, project: Project, cfg: ScorerConfig, case: Case, index: int,
               answer: str, expected: str) -> KnownVerdict:
    """One known verdict through the judge: retried like a sweep's call, read like a sweep's verdict."""
    import random

    import anyio

    from arenatui.engine.retry import RetryPolicy
    from arenatui.kernel.errors import ProviderError, TerminalError
    from arenatui.providers.base import JudgeTask, Request
    from arenatui.scoring.judge import JudgeUnreadable, judge_messages, read_verdict

    run = project.run
    policy = RetryPolicy(run.max_attempts, run.backoff_base_s, run.backoff_cap_s, run.retry_budget_s)
    rng = random.Random(f"{case.id}/{index}")
    max_tokens = judge.max_tokens or project.defaults.max_tokens
    temperature = judge.temperature if judge.temperature is not None else project.defaults.temperature
    messages = judge_messages(judge, cfg, case, answer)
    why = ""
    for attempt in range(1, policy.max_attempts + 1):
        request = Request(judge, case, index, attempt, messages, max_tokens, temperature, run.timeout_s,
                          JudgeTask(answer, case.expected, cfg.scale_range()))
        retry_after: float | None = None
        try:
            with anyio.fail_after(run.timeout_s):
                comp = await provider.complete(request)
        except TimeoutError:
            why = f"the judge's call failed (timeout): no complete answer within {run.timeout_s:g}s"
        except TerminalError as e:
            why = f"the judge's call failed (terminal): {e.message}"
            break
        except ProviderError as e:
            why = f"the judge's call failed ({type(e).__name__}): {e.message}"
            retry_after = getattr(e, "retry_after", None)
        else:
            try:
                v = read_verdict(cfg, comp.text, answer, comp.finish_reason)
            except JudgeUnreadable as e:
                return KnownVerdict(case.id, index, expected, None, None, _shown(case, str(e)))
            scale = cfg.scale_range()
            got = ("PASS" if v.passed else "FAIL") if scale is None else \
                f"{scale[0] + v.score * (scale[1] - scale[0]):g}"
            return KnownVerdict(case.id, index, expected, got, v.passed == _passes(cfg, expected), None, v.detail)
        if attempt < policy.max_attempts:
            await anyio.sleep(policy.delay(attempt, retry_after, rng))
    return KnownVerdict(case.id, index, expected, None, None, _shown(case, why))


def _shown(case: Case, message: str) -> str:
    """A judge's error as it may be shown: a sealed case's texts scrubbed out (the judge's answer may quote them)."""
    if not case.sealed:
        return message
    from arenatui.engine.sealed import SealedScrubber

    return SealedScrubber(case).scrub(message)


async def check_judges(project: Project, concurrency: int = 4) -> list[JudgeCheck]:
    """Every llm_judge scorer with known verdicts among its cases, checked (its judge's calls at most
    `concurrency` at once, fewer when the judge model's own cap says so)."""
    import anyio

    from arenatui.kernel.errors import ArenaError
    from arenatui.providers.base import prepared
    from arenatui.providers.registry import make_provider

    scorers = {s.name: s for s in project.scorers}
    first = project.scorers[0].name
    work: dict[str, list[tuple[Case, int, str, str]]] = {}
    for c in project.cases:
        for i, (answer, verdict) in enumerate(c.judge_expected):
            work.setdefault(c.scorer or first, []).append((c, i, answer, verdict))
    if not work:
        raise ArenaError(f"{project.path}: no case has judge_expected: list answers whose verdict you know on the "
                         f"cases an llm_judge scores, e.g. judge_expected = [{{answer = \"...\", verdict = "
                         f"\"PASS\"}}] (see README, 'Checking a judge')")
    models = {m.key: m for m in project.models}
    checks = []
    for name, items in work.items():
        cfg = scorers[name]
        assert cfg.judge is not None  # config validation: judge_expected only on llm_judge cases
        judge = models[cfg.judge]
        provider = make_provider(judge, project.run, concurrency_hint=concurrency, project=project)
        limit = anyio.CapacityLimiter(max(1, min(concurrency, judge.max_concurrency or concurrency)))
        out: list[KnownVerdict | None] = [None] * len(items)

        async def one(k: int, item: tuple[Case, int, str, str], provider: Any = provider, cfg: ScorerConfig = cfg,
                      judge: ModelConfig = judge, limit: Any = limit, out: list[KnownVerdict | None] = out) -> None:
            async with limit:
                out[k] = await _ask(provider, judge, project, cfg, item[0], item[1], item[2], item[3])

        try:
            await prepared(provider)  # what it raises reaches each call, which reports it as the judge's error
            async with anyio.create_task_group() as tg:
                for k, item in enumerate(items):
                    tg.start_soon(one, k, item)
        finally:
            await provider.aclose()
        checks.append(JudgeCheck(name, judge.key, cfg.scale, tuple(v for v in out if v is not None)))
    return checks


def print_checks(checks: list[JudgeCheck], console: Console) -> None:
    """The checks for people: agreement, its interval and n; the judge's errors and the disagreements by case."""
    from rich.text import Text

    from arenatui.present.safe_text import literal

    for ch in checks:
        console.print(Text.assemble("Judge check: scorer ", literal(ch.scorer, newlines=False), ", judged by ",
                                    literal(ch.judge, newlines=False), f" (scale {ch.scale})"))
        if ch.n:
            lo, hi = ch.interval
            console.print(f"  agreement on pass/fail: {ch.agreed / ch.n:.3f} (95% Wilson interval {lo:.3f}-{hi:.3f}), "
                          f"n = {ch.n}", markup=False)
            if ch.scale != "pass/fail":
                console.print(f"  same verdict: {ch.same} of {ch.n}", markup=False)
        else:
            console.print("  not enough evidence: the judge gave no verdict on any known answer", markup=False)
        if ch.errors:
            console.print(f"  judge errors: {len(ch.errors)} (the judge's own failures, not counted in n)",
                          markup=False)
            for v in ch.errors:
                console.print(Text.assemble("    case ", literal(v.case_id, newlines=False), f" #{v.index + 1}: ",
                                            literal(v.judge_error or "", newlines=False)))
        wrong = [v for v in ch.judged if not v.agrees]
        if wrong:
            console.print(f"  disagreements: {len(wrong)}", markup=False)
            for v in wrong:
                console.print(Text.assemble("    case ", literal(v.case_id, newlines=False), f" #{v.index + 1}: "
                                            f"expected {v.expected}, the judge said {v.got}"))


def cmd_judge_check(args: argparse.Namespace) -> int:

    import anyio

    from arenatui.present.terminal import out_console
    from arenatui.project import load_project

    project = load_project(args.project)
    checks = anyio.run(check_judges, project, args.concurrency)
    print_checks(checks, out_console(soft_wrap=True))
    return 0


def add_judge_check_parser(sub: Any) -> None:
    p = sub.add_parser("judge-check", help="how often the project's judge agrees with verdicts you know "
                                           "(judge_expected on cases), before a run relies on it")
    p.add_argument("--project", "-p", required=True, metavar="FILE", help="the project (arena.toml or its directory)")
    p.add_argument("--concurrency", "-c", type=int, default=4, help="judge calls at once (default 4)")
    p.set_defaults(func=cmd_judge_check)

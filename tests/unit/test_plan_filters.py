"""Plan expansion: models × cases × trials, filters, and resume minus stored keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.kernel.errors import PlanError
from arenatui.plan import Filters, Resumed, make_plan
from arenatui.project import project_from_dict


def proj(trials: int = 2):
    return project_from_dict({
        "run": {"trials": trials},
        "models": [{"key": k} for k in ("alpha", "beta", "gamma")],
        "cases": [{"id": "c1", "input": "x", "tags": ["math"]}, {"id": "c2", "input": "x", "stratum": "hard"},
                  {"id": "c3", "input": "x", "tags": ["math", "geo"]}, {"id": "c4", "input": "x"}],
    }, Path("p.toml"))


def keys(plan) -> list[tuple[str, str, int]]:
    return [(m.key, c.id, t) for m in plan.models for c, t in plan.pending(m.key)]


def test_full_expansion_has_every_call_once() -> None:
    plan = make_plan(proj())
    assert plan.total == 3 * 4 * 2 == len(keys(plan)) == len(set(keys(plan)))
    assert plan.describe() == "3 models × 4 cases × 2 trials = 24 calls"


def test_one_of_each_is_said_in_the_singular() -> None:
    from arenatui.commands.evaluate import summary_line
    from arenatui.kernel.units import plural

    plan = make_plan(proj(trials=1), Filters(models=("alpha",), limit=1))
    assert plan.describe() == "1 model × 1 case × 1 trial = 1 call"
    assert summary_line(1, 1, 1, 0.25) == "1 model × 1 case × 1 trial = 1 call in 0.2s"
    assert [plural(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert plural(1, "retry", "retries") == "1 retry" and plural(3, "retry", "retries") == "3 retries"


def test_call_order_is_seeded_interleaved_per_model_and_kept_on_resume() -> None:
    big = project_from_dict({"run": {"trials": 2, "seed": 7}, "models": [{"key": "a"}, {"key": "b"}],
                             "cases": [{"id": f"c{j}", "input": "x", "stratum": "easy" if j < 100 else "hard"}
                                       for j in range(200)]}, Path("p.toml"))
    plan = make_plan(big)
    order_a = [(c.id, t) for c, t in plan.pending("a")]
    assert order_a == [(c.id, t) for c, t in make_plan(big).pending("a")]  # the seed's order, every time
    assert order_a != [(c.id, t) for c, t in plan.pending("b")]  # each model its own
    assert order_a != sorted(order_a, key=lambda k: (int(k[0][1:]), k[1]))  # not the file's order
    other = project_from_dict({**{"run": {"trials": 2, "seed": 8}, "models": [{"key": "a"}]},
                               "cases": [{"id": f"c{j}", "input": "x"} for j in range(200)]}, Path("p.toml"))
    assert order_a != [(c.id, t) for c, t in make_plan(other).pending("a")]
    # a time window (the first fifth of the calls) covers both halves of the file alike: not the easy cases only
    first = order_a[:80]
    assert 25 <= sum(int(cid[1:]) < 100 for cid, _t in first) <= 55
    # resume: the stored calls are skipped, the rest keep their order
    done = {"a": set(order_a[:150])}
    assert [(c.id, t) for c, t in make_plan(big, resume=Resumed(done=done)).pending("a")] == order_a[150:]


def test_filters_combine() -> None:
    plan = make_plan(proj(), Filters(models=("gamma", "alpha"), tags=("math", "hard"), limit=2, trials=3))
    assert [m.key for m in plan.models] == ["alpha", "gamma"]  # project order
    assert [c.id for c in plan.cases] == ["c1", "c2"]  # tags or strata, then the first two
    assert plan.trials == 3 and plan.total == 12
    assert Filters.from_dict(Filters(("a",), ("t",), 2, 3).to_dict()) == Filters(("a",), ("t",), 2, 3)


def test_unknown_model_gets_did_you_mean() -> None:
    with pytest.raises(PlanError, match=r"no model 'betta'.*did you mean 'beta'"):
        make_plan(proj(), Filters(models=("betta",)))
    with pytest.raises(PlanError, match="the project has: alpha, beta, gamma"):
        make_plan(proj(), Filters(models=("zzzzzz",)))


def test_tags_matching_nothing_and_bad_numbers() -> None:
    with pytest.raises(PlanError, match="--tags"):
        make_plan(proj(), Filters(tags=("nope",)))
    with pytest.raises(PlanError, match="--limit"):
        make_plan(proj(), Filters(limit=0))
    with pytest.raises(PlanError, match="--trials"):
        make_plan(proj(), Filters(trials=0))


def test_resume_plans_the_rest() -> None:
    done = {"alpha": {("c1", 0), ("c1", 1), ("c3", 1)}, "gamma": {("c4", 0)}}
    plan = make_plan(proj(), resume=Resumed(done=done))
    assert plan.total == 24 and plan.done_count == 4 and plan.remaining == 20
    ks = keys(plan)
    assert len(ks) == 20
    assert not {("alpha", "c1", 0), ("alpha", "c1", 1), ("alpha", "c3", 1), ("gamma", "c4", 0)} & set(ks)
    assert ("alpha", "c3", 0) in ks


def test_the_summary_line_adds_up_when_models_were_asked_different_prompts() -> None:
    from arenatui.commands.evaluate import summary_line
    from arenatui.kernel.events import VARIANT_SEP as S

    lanes = [f"a{S}qa", f"a{S}terse", f"b{S}qa", f"b{S}terse", f"gw{S}terse"]
    assert summary_line(5, 66, 1, 1.0, lanes=lanes) == (
        "5 model × prompt variant lanes (3 models; prompt variants: a 2, b 2, gw 1) × 66 cases × 1 trial = 330 calls "
        "in 1.0s")
    assert summary_line(4, 66, 1, 1.0, lanes=lanes[:4]).startswith("2 models × 2 prompt variants × 66 cases × 1 "
                                                                     "trial = 264 calls")


def test_a_sampled_limit_draws_its_cases_by_seed_in_file_order_and_is_kept_on_resume() -> None:
    many = project_from_dict({"run": {"trials": 1}, "models": [{"key": "m"}],
                              "cases": [{"id": f"c{i:02d}", "input": "x"} for i in range(40)]}, Path("p.toml"))
    drawn = {seed: [c.id for c in make_plan(many, Filters(limit=8, sample_seed=seed)).cases] for seed in (1, 2)}
    assert drawn[1] != [f"c{i:02d}" for i in range(8)] and drawn[1] != drawn[2]  # not the first eight
    assert drawn[1] == sorted(drawn[1]) and len(set(drawn[1])) == 8  # file order (parents before children)
    assert [c.id for c in make_plan(many, Filters(limit=8, sample_seed=1)).cases] == drawn[1]  # same seed, same
    f = Filters(limit=8, sample_seed=1)
    assert Filters.from_dict(f.to_dict()) == f and "sample_seed" not in Filters(limit=8).to_dict()
    assert [c.id for c in make_plan(many, Filters(limit=50, sample_seed=1)).cases] == [c.id for c in many.cases]

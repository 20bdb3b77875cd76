"""A run's results as arrays: one (model × case) cell per item, aggregated over trials by the store.

The stats functions read only this container, so they stay pure (no SQL, no files) and the store can
fill it with GROUP BY queries instead of handing over a million rows (DESIGN.md, scale).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class LatencySample:
    """One model's answered calls: latency (last attempt, request to last byte) and time to first token, ms."""

    latency_ms: Floats
    ttft_ms: Floats


@dataclass(frozen=True, slots=True)
class VariantCells:
    """Per (model, prompt variant, case): calls scored, their scores' sum and passes, trials summed. A run with
    prompt variants carries them so that two models are compared over the (case, variant) cells both were asked
    (issue 35: a model asked only the easier prompt ranked first on a mean over a different variant set)."""

    variants: tuple[str, ...]
    asked: dict[str, tuple[str, ...]]
    """Per model, the variants it was asked with."""
    scored: Ints
    """[model, variant, case]."""
    score_sum: Floats
    passed: Ints


@dataclass(frozen=True, slots=True)
class RunResults:
    """Per (model, case) aggregates of one run's stored calls; cancelled calls are left out (never final).

    Arrays indexed [model, case] follow `models` and `cases` order. A call is *scored* when its output was
    scored (passed or failed): quality reads only those. It is *answered* when the model answered, scored or
    not (an llm_judge case outside its judge's sample, or still awaiting its judge, is `unscored`): coverage
    reads those. An errored call is coverage, never a zero; an unscored one is neither a zero nor an error.
    """

    run_id: str
    models: tuple[str, ...]
    cases: tuple[str, ...]
    trials: int
    """Planned trials per (model, case), or per (model, prompt variant, case) with prompt variants."""
    strata: tuple[str | None, ...]
    tags: tuple[tuple[str, ...], ...]
    sealed: Bools
    """Held-out cases: scored apart from working cases, shown only as aggregates."""
    calls: Ints
    """Stored final calls (passed, failed, errored, unscored)."""
    scored: Ints
    """Calls that passed or failed: the denominator of every quality figure."""
    unscored: Ints
    """Calls the model answered that no scorer scored (status 'unscored'): answered, not quality, not errors."""
    score_sum: Floats
    """Sum of scores over scored trials."""
    passed: Ints
    cost: Floats
    """Spend of every attempt of every call, errored ones and retries included."""
    tokens: Ints
    """Input + output tokens of every attempt."""
    attempts: Ints
    unscored_cost: Floats
    """The part of `cost` spent on unscored calls: what a correct answer cost leaves it out (their outcome is
    unknown). Candidate spend only: a judge's spend is in the judgments table."""
    unscored_tokens: Ints
    errors: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, errored calls by error class (rate_limited, timeout, transient, terminal)."""
    latency: dict[str, LatencySample] = field(default_factory=dict)
    clusters: Ints | None = None
    """Per case, its cluster's code (cases sharing a passage or template: `cluster` on cases, or --cluster-by):
    intervals then resample clusters, not cases. None: every case is its own cluster."""
    cluster_by: str | None = None
    """What the clusters are ('cluster', 'stratum', 'tag:X'), for the words beside an interval."""
    weights: dict[str, float] = field(default_factory=dict)
    """[strata] weights: each stratum's share in production. Empty: no reweighted score."""
    case_clusters: tuple[str | None, ...] = ()
    """Per case, its `cluster` field (empty when no case has one)."""
    by_variant: VariantCells | None = None
    """With prompt variants: the (model, variant, case) cells (None without)."""

    def calls_per_case(self, model: str) -> int:
        """Calls planned per case for a model: trials times the prompt variants it was asked with (coverage's
        denominator: a prompt a model was never asked is not a call it missed)."""
        asked = self.by_variant.asked.get(model, ()) if self.by_variant is not None else ()
        return self.trials * max(1, len(asked))

    def shared_variants(self, models: Sequence[str]) -> tuple[str, ...] | None:
        """The prompt variants every one of `models` was asked with (None without prompt variants)."""
        if self.by_variant is None:
            return None
        sets = [set(self.by_variant.asked.get(m, self.by_variant.variants)) for m in models]
        common = set.intersection(*sets) if sets else set(self.by_variant.variants)
        return tuple(v for v in self.by_variant.variants if v in common)

    def over_variants(self, variants: Sequence[str] | None) -> RunResults:
        """These results with scores (scored, score sums, passes) over the given prompt variants' cells only: what
        two models asked different variant sets are compared on. Unchanged when `variants` is None or every
        model was asked exactly these."""
        cells = self.by_variant
        if cells is None or variants is None:
            return self
        if all(set(cells.asked.get(m, cells.variants)) == set(variants) for m in self.models):
            return self
        pick = np.array([v in variants for v in cells.variants], dtype=bool)
        return dataclasses.replace(self, scored=cells.scored[:, pick].sum(axis=1),
                                   score_sum=cells.score_sum[:, pick].sum(axis=1),
                                   passed=cells.passed[:, pick].sum(axis=1))

    def clustered_by(self, kind: str | None) -> RunResults:
        """These results with intervals over clusters: `kind` 'cluster' (the cases' field), 'stratum', or 'tag:X'
        (a case's tag "X:<value>" or "X=<value>" names its cluster). None: by the `cluster` field when any case
        has one, else unclustered. A case without a cluster label is a cluster of its own."""
        if kind is None:
            if not any(c is not None for c in self.case_clusters):
                return self
            kind = "cluster"
        labels = cluster_labels(kind, self.case_clusters or (None,) * len(self.cases), self.strata, self.tags)
        return dataclasses.replace(self, clusters=cluster_codes(labels), cluster_by=kind)

    @property
    def answered(self) -> Ints:
        """Calls the model answered, scored or not: coverage's numerator."""
        return self.scored + self.unscored

    def model_index(self, model: str) -> int:
        try:
            return self.models.index(model)
        except ValueError:
            raise KeyError(model) from None

    def case_scores(self, model: str) -> Floats:
        """Per case, the mean score over this model's scored trials; NaN where none was scored."""
        i = self.model_index(model)
        n = self.scored[i]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, self.score_sum[i] / np.maximum(n, 1), np.nan)

    def clusters_of(self, mask: Bools) -> Ints | None:
        """The cluster codes of the cases in `mask` (None when unclustered)."""
        return None if self.clusters is None else self.clusters[mask]

    @property
    def working(self) -> Bools:
        return ~self.sealed


def cluster_labels(kind: str, clusters: Sequence[str | None], strata: Sequence[str | None],
                   tags: Sequence[tuple[str, ...]]) -> list[str | None]:
    if kind == "cluster":
        return list(clusters)
    if kind == "stratum":
        return list(strata)
    if kind.startswith("tag:") and len(kind) > 4:
        prefix = kind[4:]
        return [next((t for t in ts if t.startswith((prefix + ":", prefix + "="))), None) for ts in tags]
    raise ValueError(f"--cluster-by: expected cluster, stratum or tag:NAME, got {kind!r}")


def cluster_codes(labels: Sequence[str | None]) -> Ints:
    """One integer per case: equal labels share a code; a case without a label gets a code of its own."""
    codes: dict[str, int] = {}
    out = np.empty(len(labels), np.int64)
    for j, label in enumerate(labels):
        out[j] = codes.setdefault(label, len(codes)) if label is not None else -1 - j
    return out


def empty_results(run_id: str, models: tuple[str, ...] = (), trials: int = 1) -> RunResults:
    """A run with no stored calls (yet)."""
    m = len(models)
    return RunResults(
        run_id=run_id, models=models, cases=(), trials=trials, strata=(), tags=(), sealed=np.zeros(0, bool),
        calls=np.zeros((m, 0), np.int64), scored=np.zeros((m, 0), np.int64), unscored=np.zeros((m, 0), np.int64),
        score_sum=np.zeros((m, 0)), passed=np.zeros((m, 0), np.int64), cost=np.zeros((m, 0)),
        tokens=np.zeros((m, 0), np.int64), attempts=np.zeros((m, 0), np.int64), unscored_cost=np.zeros((m, 0)),
        unscored_tokens=np.zeros((m, 0), np.int64),
    )

"""Which cases an llm_judge scorer judges: one deterministic rank shared by the planner and the read model."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence


def judge_sample(scorer_name: str, sample: float, case_ids: Sequence[str]) -> frozenset[str]:
    """The scorer's cases (`case_ids`, every case it scores in the project) that its judge judges: all, or `sample`
    of them (a share in (0, 1], or from 1 up a whole number of cases).

    The sample is a deterministic rank (BLAKE2b of scorer name and case id): the same for every model, every run and
    any --limit/--tags, so paired comparisons stay paired and a resumed run judges what the first one chose."""
    n = len(case_ids)
    k = math.ceil(sample * n) if sample <= 1.0 else min(n, int(sample))
    if k >= n:
        return frozenset(case_ids)
    rank = sorted(case_ids, key=lambda cid: hashlib.blake2b(f"{scorer_name}|{cid}".encode(), digest_size=8).digest())
    return frozenset(rank[:k])

"""The one percentile (stats.percentiles): its pure face on sorted values and its numpy face agree, and both are
numpy's default (linear) percentile over the finite values."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arenatui.stats.percentiles import or_nan, percentile, percentiles

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=200), st.floats(min_value=0, max_value=100))
def test_both_faces_are_numpys_linear_percentile(values: list[float], p: float) -> None:
    want = float(np.percentile(values, p))
    pure = percentile(sorted(values), p)
    (vectorised,) = percentiles(np.array(values), (p,))
    assert pure is not None and vectorised is not None
    assert math.isclose(pure, want, rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(vectorised, want, rel_tol=1e-9, abs_tol=1e-6)


def test_none_where_there_is_no_finite_value() -> None:
    assert percentile([], 50) is None
    assert percentiles(np.array([]), (50, 99)) == [None, None]
    assert percentiles(np.array([math.nan, math.inf]), (50,)) == [None]
    assert percentiles(np.array([1.0, math.nan, 3.0]), (50,)) == [2.0]  # the NaN is left out, not propagated
    assert math.isnan(or_nan(None)) and or_nan(2.0) == 2.0


def test_the_pure_face_needs_no_numpy() -> None:
    import subprocess
    import sys

    code = "import sys, arenatui.stats.percentiles, arenatui.session.live; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

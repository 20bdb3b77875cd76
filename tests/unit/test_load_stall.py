"""The mock server's one-time stall: requests arriving inside it wait until it ends; before and after, none."""

from __future__ import annotations

import pytest

from arenatui.mockserver.faults import Stall


def test_stall_once() -> None:
    s = Stall(after_s=5.0, for_s=2.0)
    assert s.wait_s(100.0) == 0.0  # the first request starts the clock
    assert s.wait_s(104.9) == 0.0
    assert s.wait_s(105.0) == pytest.approx(2.0)
    assert s.wait_s(106.5) == pytest.approx(0.5)
    assert s.wait_s(107.0) == 0.0 and s.wait_s(200.0) == 0.0

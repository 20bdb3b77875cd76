"""Arrival processes as pure functions: rate, coefficient of variation and trace order, at fixed seeds."""

from __future__ import annotations

import statistics
from itertools import pairwise
from pathlib import Path

import pytest

from arenatui.kernel.errors import ConfigError
from arenatui.load.arrivals import Arrival, arrival_times, parse_arrival, read_trace, segment_rng


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in pairwise(times)]


def test_constant_is_exact_and_does_not_drift() -> None:
    times = list(arrival_times(Arrival("constant"), 7.0, 1000.0, segment_rng(0, 0)))
    assert len(times) == 7000
    assert times[0] == 0.0
    assert times[-1] == pytest.approx(6999 / 7.0, abs=1e-9)  # multiplied, not summed: no drift
    assert max(_gaps(times)) - min(_gaps(times)) < 1e-9


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_poisson_rate_and_cv(seed: int) -> None:
    times = list(arrival_times(Arrival("poisson"), 50.0, 400.0, segment_rng(seed, 0)))
    rate = len(times) / 400.0
    gaps = _gaps(times)
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert rate == pytest.approx(50.0, rel=0.03)  # 20,000 arrivals: the count's sd is 0.7%
    assert cv == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_keeps_the_mean_rate_and_has_the_asked_cv(cv: float) -> None:
    times = list(arrival_times(Arrival("gamma", cv=cv), 20.0, 1500.0, segment_rng(7, 0)))
    gaps = _gaps(times)
    assert len(times) / 1500.0 == pytest.approx(20.0, rel=0.1 if cv > 2 else 0.05)
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(cv, rel=0.1)


def test_same_seed_same_schedule_other_segment_other_schedule() -> None:
    a = list(arrival_times(Arrival("poisson"), 10.0, 10.0, segment_rng(5, 0)))
    b = list(arrival_times(Arrival("poisson"), 10.0, 10.0, segment_rng(5, 0)))
    c = list(arrival_times(Arrival("poisson"), 10.0, 10.0, segment_rng(5, 1)))
    assert a == b and a != c


def test_times_stay_inside_the_segment() -> None:
    for arrival in (Arrival("constant"), Arrival("poisson"), Arrival("gamma", cv=3.0)):
        times = list(arrival_times(arrival, 100.0, 2.0, segment_rng(1, 0)))
        assert times == sorted(times) and all(0.0 <= t < 2.0 for t in times)


def test_trace_jsonl_sorted_with_cases(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"offset": 2.5, "case": "b"}\n\n{"t": 0.5}\n{"offset": 1, "case": "a"}\n{"offset": 1}\n')
    rows = read_trace(f)
    assert [(r.offset_s, r.case_id) for r in rows] == [(0.5, None), (1.0, "a"), (1.0, None), (2.5, "b")]
    assert list(arrival_times(Arrival("trace", trace=rows), 1.0, 2.0, segment_rng(0, 0))) == [0.5, 1.0, 1.0]


def test_trace_csv(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("Offset,case\n0.3,x\n0.1,\n0.2,y\n")
    assert [(r.offset_s, r.case_id) for r in read_trace(f)] == [(0.1, None), (0.2, "y"), (0.3, "x")]


@pytest.mark.parametrize(("name", "text", "where"), [
    ("a.jsonl", '{"offset": -1}\n', "line 1"),
    ("b.jsonl", '{"case": "x"}\n', "line 1"),
    ("c.jsonl", "not json\n", "line 1"),
    ("d.csv", "time\n1\n", "header"),
    ("e.csv", "offset\nsoon\n", "line 2"),
    ("f.jsonl", "", "at least one"),
    ("g.jsonl", '{"offset": 1e308}\n', "line 1"),  # was accepted: the run waited forever
    ("h.jsonl", '{"offset": 0}\n{"offset": 604801}\n', "line 2"),  # past 7 days
    ("i.csv", "offset\n0\ninf\n", "line 3"),
    ("j.csv", "offset\nnan\n", "line 2"),
])
def test_bad_traces_name_file_and_line(tmp_path: Path, name: str, text: str, where: str) -> None:
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_trace(f)
    assert str(f) in str(e.value) and where in str(e.value)


@pytest.mark.parametrize("bad", ["bursty", "gamma:0", "gamma:-1", "gamma:x", "trace:", "poisson:2"])
def test_bad_arrival_values(bad: str) -> None:
    with pytest.raises(ConfigError, match="--arrival"):
        parse_arrival(bad)


def test_parse_arrival() -> None:
    assert parse_arrival("constant").kind == "constant"
    assert parse_arrival("Poisson").kind == "poisson"
    assert parse_arrival("gamma:2.5") == Arrival("gamma", cv=2.5)

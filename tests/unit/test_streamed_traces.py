"""A big trace is read as the run goes, never whole (a 10M-line trace took 60 s and 1.7 GB before its first
request): its head and tail are checked at once, a bad row further in is found when the run reaches it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from arenatui.kernel.errors import ConfigError
from arenatui.load import arrivals
from arenatui.load.arrivals import parse_arrival
from arenatui.load.run import LoadOptions, LoadRun
from arenatui.store import Store


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrivals, "STREAM_ABOVE_BYTES", 512)  # streamed above 512 bytes: a test-sized "big" file


def _jsonl(path: Path, offsets: list[float], cases: list[str | None] | None = None) -> Path:
    cases = cases or [None] * len(offsets)
    path.write_text("".join(json.dumps({"offset": o, **({"case": c} if c else {})}) + "\n"
                            for o, c in zip(offsets, cases, strict=True)), encoding="utf-8")
    return path


def test_a_big_trace_is_not_read_whole_and_a_bad_row_past_the_head_is_found_when_reached(tmp_path: Path) -> None:
    offsets = [i * 0.001 for i in range(3000)]
    f = _jsonl(tmp_path / "t.jsonl", offsets)
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2500] = '{"offset": "soon"}\n'  # past the first 1000 rows checked up front
    f.write_text("".join(lines), encoding="utf-8")
    a = parse_arrival(f"trace:{f}")
    assert a.trace == () and a.trace_file == str(f)  # nothing held
    assert a.trace_end_s == pytest.approx(2.999) and 2000 < a.trace_requests < 4000
    rows = a.rows()
    got = [next(rows).offset_s for _ in range(2500)]
    assert got == offsets[:2500]
    with pytest.raises(ConfigError, match="line 2501"):
        next(rows)


@pytest.mark.parametrize(("tail", "where"), [('{"offset": 1e308}\n', "line last"), ('{"offset": -1}\n', "line last")])
def test_a_bad_last_offset_is_refused_before_the_run(tmp_path: Path, tail: str, where: str) -> None:
    f = _jsonl(tmp_path / "t.jsonl", [i * 0.01 for i in range(3000)])  # the tail is past the rows read up front
    f.write_text(f.read_text(encoding="utf-8") + tail, encoding="utf-8")
    with pytest.raises(ConfigError, match=where):
        parse_arrival(f"trace:{f}")


def test_a_streamed_trace_out_of_order_is_an_error_naming_its_line(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "t.jsonl", [0.0, 0.1, 0.05] + [0.2 + i * 0.01 for i in range(100)])
    with pytest.raises(ConfigError, match=r"line 3: offsets in order"):
        parse_arrival(f"trace:{f}")


def test_a_streamed_csv_trace_needs_offset_first(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("case,offset\n" + "".join(f"c1,{i * 0.01}\n" for i in range(200)), encoding="utf-8")
    with pytest.raises(ConfigError, match="header"):
        parse_arrival(f"trace:{f}")


def test_a_streamed_trace_runs_every_request_with_its_case(tmp_path: Path) -> None:
    n = 120
    f = _jsonl(tmp_path / "t.jsonl", [i * 0.005 for i in range(n)], ["c2" if i % 2 else None for i in range(n)])
    arrival = parse_arrival(f"trace:{f}")
    assert arrival.trace_file is not None
    db = tmp_path / "d.db"
    proj = tmp_path / "p.toml"
    proj.write_text('[[models]]\nkey = "m"\nprovider = "sim"\nsim = { base_latency_s = 0.005, per_token_s = 0.0 }\n'
                    + "".join(f'[[cases]]\nid = "c{i}"\ninput = "q{i}"\n' for i in range(3)), encoding="utf-8")
    run = LoadRun(LoadOptions(proj, (1.0,), 1.0, arrival, db=db))
    assert anyio.run(run.run) == "finished"
    with Store(db) as store:
        cases = [r[0] for r in store.conn.execute("SELECT case_id FROM load_requests ORDER BY seq")]
    assert len(cases) == n
    assert all(c == "c2" for c in cases[1::2])  # the rows naming a case send it

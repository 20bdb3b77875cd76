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


# ---- issue 34 items 16, 19 and 25: special files, long lines, deep nesting, the stored message -------------------

@pytest.mark.parametrize("special", ["/dev/zero", "/dev/stdin", "fifo"])
def test_a_trace_that_is_no_regular_file_is_refused_before_any_read(tmp_path: Path, special: str) -> None:
    """`--arrival trace:/dev/zero` read 16 GB in a minute (a FIFO or /dev/stdin would too): st_size 0 made it a
    'small' file read whole."""
    import os

    path = special
    if special == "/dev/stdin" and os.path.isfile(special):  # stdin redirected from a file is a regular file
        pytest.skip("stdin is a regular file here")
    if special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)  # opening it to read would block for good: refused before any open
    with pytest.raises(ConfigError, match="not a regular file"):
        parse_arrival(f"trace:{path}")


def test_a_line_past_the_length_limit_is_named_by_that_limit(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid 20 MB line was called 'not JSON'; in a small file it was read whole. Both now name the limit."""
    monkeypatch.setattr(arrivals, "MAX_TRACE_LINE_BYTES", 1000)
    long_case = "c" * 2000
    small = tmp_path / "small.jsonl"
    small.write_text('{"offset": 0}\n' + json.dumps({"offset": 0.1, "case": long_case}) + "\n", encoding="utf-8")
    monkeypatch.setattr(arrivals, "STREAM_ABOVE_BYTES", 1 << 20)
    with pytest.raises(ConfigError, match=r"line 2: .*at most 1000 bytes"):
        parse_arrival(f"trace:{small}")
    monkeypatch.setattr(arrivals, "STREAM_ABOVE_BYTES", 512)
    big = _jsonl(tmp_path / "big.jsonl", [i * 0.01 for i in range(100)])
    big.write_text(big.read_text(encoding="utf-8") + json.dumps({"offset": 5.0, "case": long_case}) + "\n",
                   encoding="utf-8")  # the last line, read up front
    with pytest.raises(ConfigError, match=r"at most 1000 bytes"):
        parse_arrival(f"trace:{big}")
    mid = _jsonl(tmp_path / "mid.jsonl", [i * 0.01 for i in range(3000)])
    lines = mid.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2500] = json.dumps({"offset": 25.0, "case": long_case}) + "\n"  # reached as the run goes
    mid.write_text("".join(lines), encoding="utf-8")
    rows = parse_arrival(f"trace:{mid}").rows()
    with pytest.raises(ConfigError, match=r"line 2501: .*at most 1000 bytes"):
        for _ in range(3000):
            next(rows)


def test_a_trace_line_nested_100000_deep_is_not_json_not_a_recursion_error(tmp_path: Path) -> None:
    f = tmp_path / "deep.jsonl"
    f.write_text('{"offset": 0}\n' + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2"):
        parse_arrival(f"trace:{f}")


def test_a_bad_row_deep_in_a_streamed_trace_is_stored_as_the_paragraph_the_user_saw(tmp_path: Path) -> None:
    """It stored runs.message 'ExceptionGroup: unhandled errors in a TaskGroup'."""
    from arenatui.cli import main

    f = _jsonl(tmp_path / "t.jsonl", [i * 0.0005 for i in range(3000)])
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2500] = '{"offset": "soon"}\n'
    f.write_text("".join(lines), encoding="utf-8")
    proj = tmp_path / "p.toml"
    proj.write_text('[[models]]\nkey = "m"\nprovider = "sim"\nsim = { base_latency_s = 0.0, per_token_s = 0.0 }\n'
                    '[[cases]]\nid = "c0"\ninput = "q"\n', encoding="utf-8")
    db = tmp_path / "d.db"
    assert main(["load", "--project", str(proj), "--db", str(db), "--arrival", f"trace:{f}", "--quiet"]) == 2
    with Store(db) as store:
        (message,) = store.conn.execute("SELECT message FROM runs").fetchone()
    assert "line 2501" in message and "offset" in message and "ExceptionGroup" not in message, message

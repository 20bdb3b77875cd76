"""A server with one slot that stops a stream in progress when another request arrives (llama-cpp-python's, the mock
server's `single_slot`): the tool says what to change, after `arena evaluate` and `arena tune`, and only when the
streams were cut while another call was in flight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from httpkit import PROVIDERS, MockServerProcess, run_sweep, write_project

from arenatui.cli import main
from arenatui.kernel.advice import single_slot_advice
from arenatui.store import Store
from arenatui.store.queries import interrupted_while_busy, single_slot_lines


def _advice(key: str) -> str:
    return (f"{key}: the server interrupts a stream when another request arrives; set stream = false or "
            f"max_concurrency = 1 for {key}")


def test_the_rule_needs_a_high_share_and_a_few_cut_streams() -> None:
    assert single_slot_advice("m", 2, 2) is None  # two are no pattern
    assert single_slot_advice("m", 3, 100) is None  # 3% of attempts: a hiccup
    assert single_slot_advice("m", 20, 100) == _advice("m")


@pytest.mark.parametrize(("concurrency", "advised"), [(4, True), (1, False)])
def test_cut_streams_while_busy_give_the_advice_and_a_serial_run_none(mock_server: MockServerProcess,
                                                                      tmp_path: Path, concurrency: int,
                                                                      advised: bool) -> None:
    keys = [f"{p}-single-slot" for p in PROVIDERS]
    out = run_sweep(tmp_path, mock_server.url, [mock_server.models[k] for k in keys],
                    run={"concurrency": concurrency, "trials": 3, "max_attempts": 3})
    with Store(out.db, read_only=True) as store:
        busy = interrupted_while_busy(store, out.run_id)
        lines = single_slot_lines(store, out.run_id)
    if advised:
        assert set(busy) == set(keys) and all(n >= 3 for n, _ in busy.values()), busy
        assert lines == [_advice(k) for k in sorted(keys)]
    else:  # one call at a time: nothing interrupts a stream
        assert busy == {} and lines == []
        assert all(r["status"] == "passed" for r in out.rows.values())


def test_arena_evaluate_says_it_after_the_run(mock_server: MockServerProcess, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    key = "oa-single-slot"
    project = write_project(tmp_path / "p.toml", mock_server.url, [mock_server.models[key]],
                            run={"concurrency": 4, "trials": 3})
    code = main(["evaluate", "--project", str(project), "--db", str(tmp_path / "r.db"), "--quiet", "--no-report"])
    err = capsys.readouterr().err
    assert code in (0, 1)
    assert _advice(key) in " ".join(err.split()), err


def test_arena_tune_settles_at_1_and_says_it(mock_server: MockServerProcess, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The tuner counts a level's cut streams as that level failing: on one slot, 1 is the optimum."""
    key = "oa-single-slot"
    project = write_project(tmp_path / "p.toml", mock_server.url, [mock_server.models[key]],
                            run={"concurrency": 4, "trials": 40})
    main(["tune", "--project", str(project), "--db", str(tmp_path / "r.db"), "--budget", "120"])
    out = " ".join(capsys.readouterr().out.split())
    assert _advice(key) in out, out
    assert "optimum ≈ 1" in out, out


@pytest.mark.parametrize(("concurrency", "advised"), [(4, True), (1, False)])
def test_the_consoles_live_figures_carry_the_advice(mock_server: MockServerProcess, tmp_path: Path,
                                                    concurrency: int, advised: bool) -> None:
    """What the console shows once per model as a notice (screens/run.py): from the live figures, as it happens."""
    import anyio

    from arenatui.session.sweep import Sweep, SweepOptions

    key = "an-single-slot"
    project = write_project(tmp_path / "p.toml", mock_server.url, [mock_server.models[key]],
                            run={"concurrency": concurrency, "trials": 3})
    sweep = Sweep(SweepOptions(project=project, db=tmp_path / "r.db"))
    anyio.run(sweep.run)
    (m,) = [m for m in sweep.live.snapshot().models if m.key == key]
    assert m.single_slot == (_advice(key) if advised else None)


@pytest.mark.parametrize("prefix", ["oa", "an"])
def test_a_stream_is_stopped_while_reasoning_too(mock_server: MockServerProcess, prefix: str) -> None:
    """llama-cpp-python stops the stream in progress when a request waits for its one slot, wherever the stream
    is: while the model reasons as well as while it answers. The stopped stream ends without an answer."""
    import anyio
    import httpx

    key = f"{prefix}-reason-single-slot"
    name = mock_server.models[key]["model"]
    oa = prefix == "oa"
    path = "/v1/chat/completions" if oa else "/v1/messages"
    body = {"model": name, "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    async def main_() -> bytes:
        async with httpx.AsyncClient(base_url=mock_server.url, timeout=30) as client, \
                client.stream("POST", path, json=body) as first:
            chunks = first.aiter_bytes()
            got = await chunks.__anext__()  # the reasoning has begun

            async def second() -> None:
                await client.post(path, json={**body, "stream": False})

            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                async for more in chunks:
                    got += more
            return got

    raw = anyio.run(main_).decode()
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    if oa:
        deltas = [c.get("delta", {}) for e in events for c in e.get("choices", [])]
        thoughts = [d for d in deltas if d.get("reasoning_content") or d.get("reasoning")]
        assert 0 < len(thoughts) < 20, raw  # of its 20 reasoning tokens (an event each): stopped within them
        assert not any(d.get("content") for d in deltas), raw  # stopped before its answer began
        assert not any(c.get("finish_reason") for e in events for c in e.get("choices", [])), raw
        assert raw.rstrip().endswith("data: [DONE]"), raw[-200:]
    else:
        kinds = [e.get("delta", {}).get("type") for e in events if e.get("type") == "content_block_delta"]
        assert 0 < kinds.count("thinking_delta") < 20 and "text_delta" not in kinds, raw
        assert events[-1] == {"type": "message_stop"} and not any(e.get("type") == "message_delta" for e in events)

"""The running run's heartbeat: each beat publishes a row dated now; a beat that says nothing new re-dates the row
serialised last time instead of building it again, and any change builds a new one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from arenatui.engine.live_channel import LiveChannel
from arenatui.store.live_state import HEARTBEAT_AT, LaneLive


class _Writer:
    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def publish(self, sql: str, row: tuple[Any, ...]) -> None:
        self.rows.append(row)


def test_a_beat_re_dates_an_unchanged_row_and_rebuilds_a_changed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from arenatui.store.live_state import live_state_row as real

    lanes = {"m": LaneLive(2, 0, None)}
    writer = _Writer()
    channel = LiveChannel(Path("unused.db"), "run", cast(Any, writer), None, lanes=lambda: dict(lanes))
    built = []

    def counted(*a: Any, **kw: Any) -> tuple[Any, ...]:
        built.append(1)
        return real(*a, **kw)

    monkeypatch.setattr("arenatui.engine.live_channel.live_state_row", counted)
    clock = iter([100.0, 101.0, 102.0])
    monkeypatch.setattr("arenatui.engine.live_channel.time.time", lambda: next(clock))
    channel.beat()
    channel.beat()
    lanes["m"] = LaneLive(3, 1, 4)
    channel.beat()
    first, second, third = writer.rows
    assert len(built) == 2  # the second beat said nothing new
    assert [r[HEARTBEAT_AT] for r in writer.rows] == [100.0, 101.0, 102.0]
    assert first[:HEARTBEAT_AT] + first[HEARTBEAT_AT + 1:] == second[:HEARTBEAT_AT] + second[HEARTBEAT_AT + 1:]
    assert json.loads(second[11]) == {"m": [2, 0, None]} and json.loads(third[11]) == {"m": [3, 1, 4]}

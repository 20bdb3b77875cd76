"""The session's `arena mock-server` (one subprocess per xdist worker), stopped at the end of the session."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from httpkit import MockServerProcess, server_models, start_server, stop_server, write_project


@pytest.fixture(scope="session")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServerProcess]:
    models, mock = server_models()
    cfg = write_project(tmp_path_factory.mktemp("mockserver") / "server.toml", "http://127.0.0.1:1", models,
                        mock=mock)
    proc, m, lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                   str(cfg)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        yield MockServerProcess(url=m.group(1), proc=proc, models={d["key"]: d for d in models}, lines=lines)
    finally:
        stop_server(proc)

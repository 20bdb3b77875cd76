"""What started a run, as `arena runs`' kind column says it (issue 37 item 10): a console run (`run`) apart from a
headless one (`evaluate`), the demo, bench(); runs recorded before the command was stored read as they did."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arenatui.cli import build_parser
from arenatui.session.sweep import SweepOptions
from arenatui.store import Store
from arenatui.store.queries import run_origins
from arenatui.store.schema import MIGRATIONS


def _options(*argv: str) -> SweepOptions:
    from arenatui.cli import _sweep_options

    opts = _sweep_options(build_parser().parse_args(list(argv)))
    assert isinstance(opts, SweepOptions)
    return opts


@pytest.mark.parametrize("argv, word", [
    (("run", "--project", "p.toml"), "run"),
    (("evaluate", "--project", "p.toml"), "evaluate"),
    (("demo",), "demo"),
])
def test_each_sweep_command_says_it_started_the_run(argv: tuple[str, ...], word: str) -> None:
    assert _options(*argv).started_by == word


def test_the_stored_command_is_the_kind_unless_the_run_is_a_load_a_shard_or_a_sweep_level(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        ids = {word: store.create_run("p", None, {}, {}, 1, started_by=word)
               for word in ("run", "evaluate", "demo", "bench", "tune")}
        sharded = store.create_run("p", None, {}, {"shard": "1/2"}, 1, started_by="evaluate")
        origins = run_origins(store, [*ids.values(), sharded])
    assert {word: origins[rid] for word, rid in ids.items()} == {w: w for w in ids}
    assert origins[sharded] == "shard"


def test_a_run_recorded_before_the_command_was_stored_reads_as_it_did(tmp_path: Path) -> None:
    """A database of the schema before (no runs.started_by): its runs stay 'run' and 'demo' after the migration."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as c:
        for script in MIGRATIONS[:-1]:
            c.executescript(script)
        c.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
        for rid, project in (("old-run", "mine"), ("old-demo", "demo")):
            c.execute("INSERT INTO runs (run_id, project, config_json, filters_json, planned, started_at, status) "
                      "VALUES (?, ?, '{}', '{}', 1, 0, 'finished')", (rid, project))
    with Store(path) as store:
        assert run_origins(store, ["old-run", "old-demo"]) == {"old-run": "run", "old-demo": "demo"}


def test_a_recorded_sweep_stores_the_command_that_started_it(tmp_path: Path) -> None:
    """End to end up to the run's record (a Sweep records its run when built): `arena run`, `arena evaluate` and
    bench() each leave their word in the store."""
    from arenatui.api import _sweep
    from arenatui.cli import demo_project_path
    from arenatui.session.sweep import Sweep

    db = str(tmp_path / "r.db")
    project = str(demo_project_path())
    ids = {verb: Sweep(_options(verb, "--project", project, "--db", db)).run_id for verb in ("run", "evaluate")}
    ids["bench"] = _sweep(project, models=None, tags=None, limit=None, trials=None, k_values=None, concurrency=None,
                          seed=None, db=db, tune=False, resume=None).run_id
    with Store(db, read_only=True) as store:
        assert run_origins(store, list(ids.values())) == {rid: verb for verb, rid in ids.items()}

"""Every shipped project file loads, and one that needs keys says which, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.project import load_project

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_configs").glob("*.toml"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_config_loads(path: Path) -> None:
    project = load_project(path)
    assert project.models and project.cases


def test_real_providers_without_keys_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "r.db"
    code = main(["evaluate", "--project", str(ROOT / "sample_configs" / "real_providers.toml"),
                 "--models", "gpt-4o-mini", "--db", str(db), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error:") and "OPENAI_API_KEY" in err and "gpt-4o-mini" in err
    assert "Traceback" not in err

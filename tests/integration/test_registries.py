"""Adding a provider and a scorer kind is one new piece of code and one registration (providers.registry,
scoring.registry): a toy of each here, registered from this file alone, runs a real sweep end to end (config
check with "did you mean", the engine, the store, the report) and is forgotten again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arenatui.cli import main
from arenatui.config.schema import Case, ModelConfig, RunSettings, ScorerConfig
from arenatui.providers import registry as providers
from arenatui.providers.base import Completion, Provider, Request
from arenatui.scoring import registry as scorers
from arenatui.scoring.registry import JudgeSettings, ScorerKind, SettingsTable
from arenatui.scoring.scorers import Score


class ShoutProvider:
    """Answers every prompt in capitals: a provider in this process, like `sim`."""

    def __init__(self, model: ModelConfig) -> None:
        self.model = model

    async def complete(self, request: Request) -> Completion:
        text = request.case.prompt_text().upper()
        return Completion(text=text, input_tokens=len(text), output_tokens=len(text))

    async def aclose(self) -> None:
        return None


def _shout(model: ModelConfig, run: RunSettings, hint: int) -> Provider:
    return ShoutProvider(model)


class Loud(ScorerKind):
    """Passes an answer with at least `min_caps` capital letters; a setting only this kind has."""

    name = "loud"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        super().read(t, judge)
        return {"options": {"min_caps": t.integer("min_caps", 1, lo=1)}}

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        caps = sum(ch.isupper() for ch in output)
        ok = caps >= cfg.options["min_caps"]
        return Score(float(ok), ok, False, f"{caps} capitals")


@pytest.fixture
def registered() -> Iterator[None]:
    providers.register(providers.ProviderSpec("shout", _shout))
    scorers.register(Loud())
    try:
        yield
    finally:
        providers.unregister("shout")
        scorers.unregister("loud")


def _project(tmp_path: Path, *, provider: str = "shout", kind: str = "loud") -> Path:
    p = tmp_path / "toy.toml"
    p.write_text(f'''[project]
name = "toy"

[[models]]
key = "m"
provider = "{provider}"

[[scorers]]
name = "caps"
kind = "{kind}"
min_caps = 6

[[cases]]
id = "long"
input = "say hello world"

[[cases]]
id = "short"
input = "hi"
''', encoding="utf-8")
    return p


def test_a_toy_provider_and_scorer_kind_run_a_sweep(registered: None, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "d.db")
    assert main(["evaluate", "--project", str(_project(tmp_path)), "--db", db, "--quiet", "--no-report"]) == 0
    run_id = re.search(r"Run id: (\S+)", capsys.readouterr().out).group(1)  # type: ignore[union-attr]
    assert main(["export", run_id, "--db", db, "--format", "jsonl"]) == 0
    calls = {r["case_id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines()) if r["row"] == "call"}
    assert calls["long"]["output"] == "SAY HELLO WORLD" and calls["long"]["status"] == "passed"
    assert calls["short"]["status"] == "failed"  # 2 capitals of the 6 asked
    assert calls["long"]["score_detail"] == "13 capitals"
    # the run's stored configuration keeps the kind's own setting where it reads it: resume checks it again
    assert main(["evaluate", "--resume", run_id, "--db", db, "--quiet", "--no-report"]) == 0


def test_unknown_names_are_still_bad_input_with_a_hint(registered: None, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--project", str(_project(tmp_path, provider="shuot")), "--quiet"]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the paragraph wraps at the terminal's width
    assert "provider" in err and "did you mean 'shout'" in err and "Traceback" not in err
    assert main(["evaluate", "--project", str(_project(tmp_path, kind="lound")), "--quiet"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "kind" in err and "did you mean 'loud'" in err


def test_a_setting_the_kind_does_not_own_is_an_unknown_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "min_caps" is the toy kind's own: an exact scorer given it is told the key is unknown
    p = _project(tmp_path, kind="exact")
    providers.register(providers.ProviderSpec("shout", _shout))
    try:
        assert main(["evaluate", "--project", str(p), "--quiet"]) == 2
    finally:
        providers.unregister("shout")
    assert "min_caps" in capsys.readouterr().err


def test_a_built_in_kind_gives_its_verdict_through_the_registry_like_an_added_one() -> None:
    # no if-chain over kind names: the registered class is the verdict, so replacing `exact` replaces it
    from arenatui.scoring.scorers import Scorer

    class Reversed(ScorerKind):
        name = "exact"

        def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
            ok = output[::-1] == case.expected
            return Score(float(ok), ok)

    case = Case(id="c", input="q", expected="olleh")
    builtin = scorers.scorer_kind("exact")
    assert builtin is not None and Scorer(ScorerConfig(name="e", kind="exact")).score("olleh", case).passed
    scorers.register(Reversed())
    try:
        assert Scorer(ScorerConfig(name="e", kind="exact")).score("hello", case).passed
        assert not Scorer(ScorerConfig(name="e", kind="exact")).score("olleh", case).passed
    finally:
        scorers.register(builtin)
    assert Scorer(ScorerConfig(name="e", kind="exact")).score("olleh", case).passed


def test_a_kind_no_longer_registered_is_a_scoring_error_per_call_not_a_crash() -> None:
    # a resumed run whose added kind this process does not register: each call says so, the sweep goes on
    from arenatui.scoring.scorers import Scorer, ScoringError

    s = Scorer(ScorerConfig(name="gone", kind="loud"))
    with pytest.raises(ScoringError, match="no scorer kind 'loud' is registered"):
        s.score("LOUD", Case(id="c", input="q"))

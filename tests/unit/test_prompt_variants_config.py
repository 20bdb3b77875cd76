"""Prompt variants, repairs and escalation in a project: read and validated like every other key (file, key path,
what was expected, did-you-mean), planned as one lane per model × variant, and asked as the variant says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenatui.config.schema import Case, Defaults, ModelConfig, PromptVariant
from arenatui.kernel.errors import ConfigError, PlanError
from arenatui.plan import Filters, make_plan
from arenatui.project import load_project
from arenatui.project.read import project_from_dict, project_to_dict
from arenatui.providers.base import build_messages

PROJECT = """
[project]
name = "v"
prompts = ["terse", "schema_first"]

[run]
repair = { attempts = 2, on = ["invalid_format", "empty"], message = "Fix this: {error}" }

[[prompts]]
name = "terse"
template = "Q: {input}"

[[prompts]]
name = "schema_first"
system = "Reply with JSON."
template = "{input}\\nJSON only."

[[prompts]]
name = "unused"
template = "{input}"

[[models]]
key = "a"
escalate_to = "b"
sim = { prompt_accuracy = { terse = 0.9, schema_first = 0.6 } }

[[models]]
key = "b"
prompts = ["unused"]

[[cases]]
id = "q1"
input = "2+2?"
expected = "4"

[[cases]]
id = "q2"
input = "3+3?"
expected = "6"
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "arena.toml"
    p.write_text(text, encoding="utf-8")
    return p


def _err(tmp_path: Path, old: str, new: str) -> ConfigError:
    assert old in PROJECT
    with pytest.raises(ConfigError) as ei:
        load_project(_write(tmp_path, PROJECT.replace(old, new, 1)))
    return ei.value


def test_a_project_with_variants_repairs_and_escalation_reads_and_round_trips(tmp_path: Path) -> None:
    p = load_project(_write(tmp_path, PROJECT))
    assert [v.name for v in p.prompts] == ["terse", "schema_first", "unused"]
    assert p.prompt_names == ("terse", "schema_first")
    assert p.run.repair is not None and p.run.repair.attempts == 2 and p.run.repair.on == ("invalid_format", "empty")
    assert p.model("a").escalate_to == "b" and p.model("a").sim.prompt_accuracy == {"terse": 0.9, "schema_first": 0.6}
    assert [v.name for v in p.variants_of(p.model("a"))] == ["terse", "schema_first"]  # the project's list
    assert [v.name for v in p.variants_of(p.model("b"))] == ["unused"]  # its own
    # what a run stores reads back to the same project (resume plans the same calls)
    again = project_from_dict(project_to_dict(p), p.path)
    assert again.prompts == p.prompts and again.prompt_names == p.prompt_names and again.run == p.run
    assert again.model("a") == p.model("a") and again.model("b").prompts == ("unused",)


@pytest.mark.parametrize(("old", "new", "key", "words"), [
    ('prompts = ["terse", "schema_first"]', 'prompts = ["terse", "schema_frist"]', "project.prompts[1]",
     "did you mean 'schema_first'?"),
    ('prompts = ["unused"]', 'prompts = ["unsued"]', "models[1].prompts[0]", "did you mean 'unused'?"),
    ('template = "Q: {input}"', 'template = "Q: {question}"', "prompts[0].template", "holding {input}"),
    ('name = "unused"', 'name = "terse"', "prompts[2].name", "duplicate prompt name 'terse'"),
    ('escalate_to = "b"', 'escalate_to = "bb"', "models[0].escalate_to", "did you mean 'b'?"),
    ('escalate_to = "b"', 'escalate_to = "a"', "models[0].escalate_to", "names the model itself"),
    ('on = ["invalid_format", "empty"]', 'on = ["invalid_fromat"]', "run.repair.on[0]",
     "did you mean 'invalid_format'?"),
    ('message = "Fix this: {error}"', 'message = "Fix this"', "run.repair.message", "holding {error}"),
    ("attempts = 2", "atempts = 2", "run.repair.atempts", "did you mean 'attempts'?"),
    ("terse = 0.9,", "trese = 0.9,", "models[0].sim.prompt_accuracy.trese", "did you mean 'terse'?"),
    ("terse = 0.9,", "terse = 1.9,", "models[0].sim.prompt_accuracy.terse", "<= 1"),
])
def test_bad_variant_repair_and_escalation_settings_name_file_key_and_expectation(
        tmp_path: Path, old: str, new: str, key: str, words: str) -> None:
    e = _err(tmp_path, old, new)
    assert e.file == str(tmp_path / "arena.toml")
    assert e.key == key
    assert words in e.expected


def test_the_plan_has_one_lane_per_model_and_variant_and_prompts_narrows_it(tmp_path: Path) -> None:
    p = load_project(_write(tmp_path, PROJECT))
    plan = make_plan(p)
    assert [m.key for m in plan.models] == ["a · terse", "a · schema_first", "b · unused"]
    assert [m.base_key for m in plan.models] == ["a", "a", "b"]
    assert plan.total == 3 * 2
    assert plan.escalations["a"].key == "b"
    # the product adds up: 3 lanes, not 2 models × 3 variants (issue 35)
    assert plan.describe() == ("3 model × prompt variant lanes (2 models; prompt variants: a 2, b 1) × 2 cases × "
                               "1 trial = 6 calls")
    narrowed = make_plan(p, Filters(prompts=("terse",)))
    assert [m.key for m in narrowed.models] == ["a · terse"]
    assert Filters.from_dict(Filters(prompts=("terse",)).to_dict()).prompts == ("terse",)
    with pytest.raises(PlanError, match="did you mean 'terse'"):
        make_plan(p, Filters(prompts=("trese",)))
    # a project without [[prompts]] plans exactly as before
    plain = make_plan(dataclasses.replace(p, prompts=(), prompt_names=(),
                                          models=tuple(dataclasses.replace(m, prompts=()) for m in p.models)))
    assert [m.key for m in plain.models] == ["a", "b"] and all(m.variant is None for m in plain.models)


def test_a_variant_asks_with_its_template_and_system_prompt_and_chat_cases_keep_working() -> None:
    v = PromptVariant("s", system="Be brief.", template="Q: {input} ({input})")
    lane = dataclasses.replace(ModelConfig(key="m", system="model system"), key="m · s", variant=v)
    text = build_messages(lane, Defaults(system="project system"), Case(id="c", input="2+2? {output:x} {x}"))
    assert text == ({"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Q: 2+2? {output:x} {x} (2+2? {output:x} {x})"})  # literal, no format
    chat = Case(id="c", input=({"role": "system", "content": "case system"}, {"role": "user", "content": "hi"},
                               {"role": "assistant", "content": "hello"}, {"role": "user", "content": "2+2?"}))
    msgs = build_messages(lane, Defaults(), chat)
    assert msgs[0] == {"role": "system", "content": "case system"}  # the case's own system message wins
    assert msgs[1]["content"] == "hi" and msgs[-1]["content"] == "Q: 2+2? (2+2?)"  # the last user message templated
    assert chat.input[-1]["content"] == "2+2?"  # the case itself untouched
    no_template = dataclasses.replace(lane, variant=PromptVariant("n", system=None, template=None))
    assert build_messages(no_template, Defaults(), Case(id="c", input="x")) == (
        {"role": "system", "content": "model system"}, {"role": "user", "content": "x"})


def test_a_database_from_before_variants_reads_as_one_default_variant(tmp_path: Path) -> None:
    import sqlite3

    from arenatui.store import Store
    from arenatui.store.db import _split
    from arenatui.store.schema import MIGRATIONS

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    for m in MIGRATIONS[:14]:
        for statement in _split(m):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 14")
    conn.execute("INSERT INTO results (run_id, model_key, case_id, trial, status, passed, attempts, total_ms, "
                 "input_tokens, output_tokens, cost, started_at, finished_at) VALUES ('r', 'm', 'c', 0, 'passed', 1, "
                 "2, 1.0, 3, 4, 0.5, 0, 1)")
    conn.execute("INSERT INTO judgments (run_id, model_key, case_id, trial, judge_key, status, passed, attempts, "
                 "total_ms, input_tokens, output_tokens, cost, started_at, finished_at) VALUES ('r', 'm', 'c', 0, "
                 "'j', 'passed', 1, 1, 1.0, 1, 1, 0.1, 0, 1)")
    conn.commit()
    conn.close()
    with Store(db) as store:
        assert store.done_keys("r") == {"m": {("c", 0)}}  # the lane of a model without variants is its key
        row = store.result("r", "m", "c", 0)
        assert row is not None and row["variant"] == "" and row["attempts"] == 2 and row["repairs"] == 0
        assert row["first_passed"] is None and row["escalated_to"] is None
        assert store.conn.execute("SELECT variant FROM judgments").fetchall() == [("",)]
        assert store.open_steps("r") == {}

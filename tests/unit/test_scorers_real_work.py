"""json_schema, f1 and python scorers, and their configuration, on passing, failing and malformed outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arenatui.config import Case, ScorerConfig
from arenatui.kernel.errors import ConfigError
from arenatui.project import load_project
from arenatui.scoring import Scorer, ScorerSet, ScoringError
from arenatui.scoring.failure_modes import classify

SCHEMA = {
    "type": "object",
    "required": ["name", "items"],
    "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "required": ["price"],
                                             "properties": {"price": {"type": "number", "minimum": 0}}}},
    },
}


def schema_scorer() -> Scorer:
    return Scorer(ScorerConfig(name="s", kind="json_schema", schema=SCHEMA))


CASE = Case(id="c", input="q", expected=None)


def test_json_schema_passes_valid_json_and_the_first_fenced_block() -> None:
    s = schema_scorer()
    assert s.score('{"name": "a", "items": [{"price": 1.5}]}', CASE).passed
    wrapped = 'Sure! Here it is:\n```json\n{"name": "a", "items": []}\n```\nAnything else?'
    assert s.score(wrapped, CASE).passed


def test_json_schema_failure_names_the_path_that_failed() -> None:
    sc = schema_scorer().score('{"name": "a", "items": [{"price": 1}, {"price": "free"}]}', CASE)
    assert not sc.passed and sc.invalid_format
    assert sc.detail is not None and sc.detail.startswith("$.items[1].price:")
    assert "number" in sc.detail


@pytest.mark.parametrize("out", ["not json at all", '```json\n{"name": "a", "items": [\n```', "", "[" * 100_000])
def test_json_schema_malformed_outputs_are_invalid_format_never_an_exception(out: str) -> None:
    sc = schema_scorer().score(out, CASE)
    assert not sc.passed and sc.invalid_format and sc.detail


def test_json_prose_wrapped_truncated_is_told_apart_by_failure_mode() -> None:
    sc = schema_scorer().score('Here you go: ```json\n{"name": "a", "items": [', CASE)
    assert classify(passed=sc.passed, output="x", invalid_format=sc.invalid_format, finish_reason="length") \
        == "truncated"
    assert classify(passed=sc.passed, output="x", invalid_format=sc.invalid_format) == "invalid_format"


def test_f1_reads_the_label_and_refuses_to_guess() -> None:
    s = Scorer(ScorerConfig(name="f", kind="f1", labels=("positive", "negative", "neutral")))
    case = Case(id="c", input="q", expected="positive")
    assert s.score("Positive.", case).passed
    assert s.score("The sentiment is **positive**", case).passed
    assert not s.score("negative", case).passed and not s.score("negative", case).invalid_format
    both = s.score("positive or negative", case)
    assert not both.passed and both.invalid_format


def test_choice_and_numeric_with_no_answer_are_invalid_format() -> None:
    case = Case(id="c", input="q", expected="B")
    assert Scorer(ScorerConfig(name="c", kind="choice")).score("I think it's the second one", case).invalid_format
    num = Case(id="n", input="q", expected="4")
    assert Scorer(ScorerConfig(name="n", kind="numeric")).score("four", num).invalid_format
    assert not Scorer(ScorerConfig(name="n", kind="numeric")).score("5", num).invalid_format


PROJECT = """
[project]
name = "p"
[[models]]
key = "m"
provider = "sim"
model = "m"
{scorers}
[[cases]]
id = "c1"
input = "q"
expected = "yes"
"""


def write(tmp_path: Path, scorers: str, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT.format(scorers=scorers))
    return p


def test_python_scorer_loads_a_function_from_the_project_directory(tmp_path: Path) -> None:
    p = write(tmp_path, '[[scorers]]\nname = "mine"\nkind = "python"\nfunction = "my_scorers:grade"\n',
              **{"my_scorers.py": "def grade(case, output):\n    return 1.0 if output.strip() == case.expected "
                                  "else 0.25\n"})
    project = load_project(p)
    scorers = ScorerSet(project.scorers, tmp_path)
    case = project.cases[0]
    assert scorers.score("yes", case).passed
    sc = scorers.score("no", case)
    assert sc.value == 0.25 and not sc.passed


@pytest.mark.parametrize(("files", "function", "words"), [
    ({}, "nowhere_module:grade", "was not found"),
    ({"s.py": "x = 1\n"}, "s:grade", "has no function 'grade'"),
    ({"s.py": "raise RuntimeError('boom')\n"}, "s:grade", "failed to import: RuntimeError: boom"),
    ({}, "no_colon", "expected 'package.module:function'"),
])
def test_python_scorer_problems_are_config_errors(tmp_path: Path, files: dict[str, str], function: str,
                                                  words: str) -> None:
    p = write(tmp_path, f'[[scorers]]\nname = "mine"\nkind = "python"\nfunction = "{function}"\n', **files)
    with pytest.raises(ConfigError) as e:
        load_project(p)
    assert e.value.key == "scorers[0].function"
    assert words in str(e.value)


def test_python_scorer_bad_return_value_is_an_error_of_that_call(tmp_path: Path) -> None:
    p = write(tmp_path, '[[scorers]]\nname = "mine"\nkind = "python"\nfunction = "s:grade"\n',
              **{"s.py": "def grade(case, output):\n    return 7\n"})
    project = load_project(p)
    with pytest.raises(ScoringError, match="expected a number from 0 to 1"):
        ScorerSet(project.scorers, tmp_path).score("yes", project.cases[0])


def test_json_schema_from_inline_table_or_file_and_bad_schemas(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    p = write(tmp_path, '[[scorers]]\nname = "j"\nkind = "json_schema"\nschema_file = "schema.json"\n')
    assert load_project(p).scorers[0].schema == SCHEMA
    p = write(tmp_path, '[[scorers]]\nname = "j"\nkind = "json_schema"\nschema = { type = "object" }\n')
    assert load_project(p).scorers[0].schema == {"type": "object"}
    for body, key, words in [
        ('schema = { type = "objekt" }', "scorers[0].schema", "is not a valid JSON Schema"),
        ("", "scorers[0].schema", "exactly one of"),
        ('schema_file = "missing.json"', "scorers[0].schema_file", "cannot read"),
    ]:
        p = write(tmp_path, f'[[scorers]]\nname = "j"\nkind = "json_schema"\n{body}\n')
        with pytest.raises(ConfigError) as e:
            load_project(p)
        assert e.value.key == key and words in str(e.value)


def test_code_exec_is_refused_unless_the_project_allows_it(tmp_path: Path) -> None:
    p = write(tmp_path, '[[scorers]]\nname = "code"\nkind = "code_exec"\n')
    with pytest.raises(ConfigError) as e:
        load_project(p)
    assert "allow_code_exec = true" in str(e.value)
    p.write_text(p.read_text().replace('[project]\nname = "p"', '[project]\nname = "p"\n[run]\nallow_code_exec = true'))
    assert load_project(p).run.allow_code_exec


def test_new_scorer_settings_survive_the_stored_round_trip(tmp_path: Path) -> None:
    from arenatui.project import project_from_dict, project_to_dict

    p = write(tmp_path, '[[scorers]]\nname = "f"\nkind = "f1"\nlabels = ["yes", "no"]\n'
                        '[[scorers]]\nname = "j"\nkind = "json_schema"\nschema = { type = "object" }\n')
    text = p.read_text().replace('expected = "yes"', 'expected = "yes"\nlanguage = "fr"\ntests = "assert True"')
    p.write_text(text)
    project = load_project(p)
    again = project_from_dict(project_to_dict(project), p)
    assert again.scorers == project.scorers and again.cases == project.cases

"""Every bad project input gives a clear ConfigError: the file, the key path and what was expected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arenatui.kernel.errors import ConfigError
from arenatui.project import load_project

GOOD_MODELS = """
[[models]]
key = "a"
provider = "sim"

[[models]]
key = "b"
provider = "sim"
"""
CASES = """
[[cases]]
id = "q1"
input = "2+2?"
expected = "4"
"""


def write(tmp_path: Path, text: str, name: str = "arena.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def err(tmp_path: Path, text: str, **files: str) -> ConfigError:
    for fname, content in files.items():
        write(tmp_path, content, fname.replace("__", "."))
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as ei:
        load_project(p)
    e = ei.value
    assert str(e).startswith(e.file)
    return e


def test_wrong_type_names_file_key_path_and_expectation(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[models]]\nkey = "c"\nrpm = "fast"\n' + CASES)
    assert e.file == str(tmp_path / "arena.toml")
    assert e.key == "models[2].rpm"
    assert "expected a number" in e.expected and "'fast'" in e.expected
    assert str(e) == f"{tmp_path / 'arena.toml'}: models[2].rpm: {e.expected}"


@pytest.mark.parametrize(("snippet", "key", "words"), [
    ("[run]\nconcurrency = true\n", "run.concurrency", "whole number, got a boolean"),
    ("[run]\nconcurrency = 0\n", "run.concurrency", ">= 1"),
    ("[run]\ntimeout_s = 0\n", "run.timeout_s", "> 0"),
    ("[run]\ntrials = 1.5\n", "run.trials", "whole number"),
    ("[defaults]\ntemperature = 3\n", "defaults.temperature", "<= 2"),
    ("run = 5\n", "run", "expected a table"),
])
def test_bad_values(tmp_path: Path, snippet: str, key: str, words: str) -> None:
    e = err(tmp_path, snippet + GOOD_MODELS + CASES)
    assert e.key == key
    assert words in e.expected


def test_nested_sim_value_out_of_range(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[models]]\nkey = "c"\nsim = { accuracy = 1.5 }\n' + CASES)
    assert e.key == "models[2].sim.accuracy" and "<= 1" in e.expected


@pytest.mark.parametrize(("snippet", "key", "suggestion"), [
    ("[run]\nconcurency = 4\n" + GOOD_MODELS, "run.concurency", "concurrency"),
    ('[[models]]\nkey = "a"\nmax_concurrancy = 3\n', "models[0].max_concurrancy", "max_concurrency"),
    ('[[models]]\nkey = "a"\nsim = { rpmm = 3 }\n', "models[0].sim.rpmm", "rpm"),
    ("[project]\nnaem = 'x'\n" + GOOD_MODELS, "project.naem", "name"),
])
def test_unknown_keys_are_errors_with_did_you_mean(tmp_path: Path, snippet: str, key: str, suggestion: str) -> None:
    e = err(tmp_path, snippet + CASES)
    assert e.key == key
    assert "unknown key" in e.expected and f"did you mean '{suggestion}'?" in e.expected


def test_unknown_key_in_a_case(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[cases]]\nid = "q"\ninput = "x"\nexpectd = "4"\n')
    assert e.key == "cases[0].expectd" and "did you mean 'expected'?" in e.expected


def test_top_level_typo_is_reported_as_such_not_as_an_empty_case_set(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[case]]\nid = "q"\ninput = "x"\n')
    assert e.key == "case"
    assert "unknown key" in e.expected and "did you mean 'cases'?" in e.expected


def test_missing_case_file(tmp_path: Path) -> None:
    e = err(tmp_path, 'cases_file = "nope.jsonl"\n' + GOOD_MODELS)
    assert e.file == str(tmp_path / "arena.toml") and e.key == "cases_file"
    assert "nope.jsonl" in e.expected and "does not exist" in e.expected


def test_duplicate_case_ids_inline(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + CASES + CASES)
    assert e.key == "cases[1].id"
    assert "duplicate case id 'q1'" in e.expected and "cases[0].id" in e.expected


def test_duplicate_case_ids_across_inline_and_file(tmp_path: Path) -> None:
    rows = [{"id": "x1", "input": "a"}, {"id": "q1", "input": "b"}]
    e = err(tmp_path, 'cases_file = "cases.jsonl"\n' + GOOD_MODELS + CASES,
            cases__jsonl="".join(json.dumps(r) + "\n" for r in rows))
    assert e.file == str(tmp_path / "cases.jsonl")
    assert e.key == "line 2.id"
    assert "duplicate case id 'q1'" in e.expected and "cases[0].id" in e.expected


def test_duplicate_model_keys(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[models]]\nkey = "a"\n' + CASES)
    assert e.key == "models[2].key"
    assert "duplicate model key 'a'" in e.expected and "models[0].key" in e.expected


def test_invalid_regex(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + CASES + '[[scorers]]\nkind = "regex"\npattern = "(unclosed"\n')
    assert e.key == "scorers[0].pattern" and "not a valid regular expression" in e.expected


def test_unknown_scorer_kind_suggests(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + CASES + '[[scorers]]\nkind = "exactt"\n')
    assert e.key == "scorers[0].kind" and "did you mean 'exact'?" in e.expected


def test_empty_case_set(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS)
    assert e.key == "cases" and "empty" in e.expected


def test_empty_case_file_is_an_empty_case_set(tmp_path: Path) -> None:
    e = err(tmp_path, 'cases_file = "cases.jsonl"\n' + GOOD_MODELS, cases__jsonl="\n\n")
    assert e.key == "cases" and "empty" in e.expected


def test_bad_jsonl_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "input": "x"})
    e = err(tmp_path, 'cases_file = "cases.jsonl"\n' + GOOD_MODELS,
            cases__jsonl=f"{good}\n\n{{'id': 2}}\n")
    assert e.file == str(tmp_path / "cases.jsonl")
    assert e.key == "line 3" and "not valid JSON" in e.expected


@pytest.mark.parametrize(("row", "key", "words"), [
    ({"id": "a"}, "line 1.input", "is required"),
    ({"input": "x"}, "line 1.id", "is required"),
    ({"id": "a", "input": "x", "tags": "math"}, "line 1.tags", "array of strings"),
    ({"id": "a", "input": [{"role": "robot", "content": "x"}]}, "line 1.input[0].role", "system, user"),
    ({"id": "a", "input": "x", "expected": True}, "line 1.expected", "string or number"),
    ([1, 2], "line 1", "expected a table"),
])
def test_bad_case_rows(tmp_path: Path, row: Any, key: str, words: str) -> None:
    e = err(tmp_path, 'cases_file = "cases.jsonl"\n' + GOOD_MODELS, cases__jsonl=json.dumps(row) + "\n")
    assert e.file == str(tmp_path / "cases.jsonl")
    assert e.key == key and words in e.expected


def test_no_models(tmp_path: Path) -> None:
    e = err(tmp_path, CASES)
    assert e.key == "models" and "[[models]]" in e.expected


def test_bad_provider_suggests(tmp_path: Path) -> None:
    e = err(tmp_path, '[[models]]\nkey = "a"\nprovider = "opeanai"\n' + CASES)
    assert e.key == "models[0].provider" and "did you mean 'openai'?" in e.expected


def test_api_key_value_instead_of_name_is_refused_without_echoing_it(tmp_path: Path) -> None:
    secret = "sk-live-abcdefghijklmnop1234567890"
    e = err(tmp_path, f'[[models]]\nkey = "a"\nprovider = "openai"\napi_key_env = "{secret}"\n' + CASES)
    assert e.key == "models[0].api_key_env"
    assert secret not in str(e)


def test_case_names_an_unknown_scorer(tmp_path: Path) -> None:
    e = err(tmp_path, GOOD_MODELS + '[[scorers]]\nname = "numeric"\nkind = "numeric"\n'
            '[[cases]]\nid = "q"\ninput = "x"\nscorer = "numerc"\n')
    assert "did you mean 'numeric'?" in e.expected


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    e = err(tmp_path, "[run\n")
    assert e.key is None and "not valid TOML" in e.expected
    with pytest.raises(ConfigError) as ei:
        load_project(tmp_path / "missing.toml")
    assert "no such file" in str(ei.value)


def test_csv_cases_load(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text("id,input,expected,tags\nc1,hi,yo,a;b\nc2,hey,,\n", encoding="utf-8")
    p = write(tmp_path, 'cases_file = "cases.csv"\n' + GOOD_MODELS)
    proj = load_project(tmp_path)  # a directory holding arena.toml works too
    assert proj.path == p
    assert [(c.id, c.expected, c.tags) for c in proj.cases] == [("c1", "yo", ("a", "b")), ("c2", None, ())]


# ---- issue 34 item 24: a byte-order mark and a symlink loop are named --------------------------------------------

def test_a_byte_order_mark_is_named(tmp_path: Path) -> None:
    p = tmp_path / "arena.toml"
    p.write_bytes(b"\xef\xbb\xbf" + (GOOD_MODELS + CASES).encode())
    with pytest.raises(ConfigError, match="byte-order mark") as ei:
        load_project(p)
    assert "Invalid statement" not in str(ei.value)


def test_a_symlink_loop_is_named_not_called_missing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(ConfigError, match="loop of symbolic links") as ei:
        load_project(a)
    assert "no such file" not in str(ei.value)
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    e = err(tmp_path, GOOD_MODELS + '[[cases]]\nfile = "loop.jsonl"\n')
    assert "loop" in str(e) and "does not exist" not in str(e)
OA = '[[models]]\nkey = "r"\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
AN = '[[models]]\nkey = "r"\nprovider = "anthropic"\nbase_url = "http://127.0.0.1:9"\n'


@pytest.mark.parametrize(("model", "snippet", "key", "words"), [
    (OA, 'token_limit_param = "max_completion_token"', "models[0].token_limit_param",
     "did you mean 'max_completion_tokens'"),
    (AN, 'token_limit_param = "max_tokens"', "models[0].token_limit_param", "Anthropic's API takes max_tokens"),
    (OA, 'temperature = "none"', "models[0].temperature", 'or "omit"'),
    (OA, 'reasoning_effort = "max"', "models[0].reasoning_effort", "minimal, low, medium, high"),
    (AN, 'reasoning_effort = "low"', "models[0].reasoning_effort", "thinking = {budget_tokens = N}"),
    (OA, "thinking = {budget_tokens = 2048}", "models[0].thinking", "takes reasoning_effort"),
    (AN, "thinking = {budget_tokens = 100}", "models[0].thinking.budget_tokens", ">= 1024"),
    (AN, "max_tokens = 2000\nthinking = {budget_tokens = 2048}", "models[0].thinking.budget_tokens",
     "fewer than this model's max_tokens (2000)"),
    (AN, "thinking = {}", "models[0].thinking.budget_tokens", "is required"),
])
def test_reasoning_model_settings_are_validated(tmp_path: Path, model: str, snippet: str, key: str,
                                                words: str) -> None:
    e = err(tmp_path, model + snippet + "\n" + CASES)
    assert e.key == key and words in e.expected, str(e)


def test_reasoning_model_settings_load_and_survive_a_stored_run(tmp_path: Path) -> None:
    from arenatui.project.read import project_from_dict, project_to_dict

    p = load_project(write(tmp_path, OA + 'temperature = "omit"\ntoken_limit_param = "max_completion_tokens"\n'
                                       'reasoning_effort = "high"\n' + AN.replace('"r"', '"t"')
                           + "max_tokens = 4096\nthinking = {budget_tokens = 2048}\n" + CASES))
    oa, an = p.models
    assert (oa.omit_temperature, oa.temperature, oa.token_limit_param, oa.reasoning_effort) == \
        (True, None, "max_completion_tokens", "high")
    assert an.thinking_budget == 2048 and not an.omit_temperature
    stored = project_to_dict(p)
    assert stored["models"][0]["temperature"] == "omit" and stored["models"][1]["thinking"] == {"budget_tokens": 2048}
    again = project_from_dict(stored, p.path)
    assert again.models == p.models

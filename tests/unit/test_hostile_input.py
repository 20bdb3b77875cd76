"""Issue 9, input items: hostile project and case files, out-of-bound numbers and invisible marks end in one
clear error (exit 2, file, line or key), never a traceback, a silent change or a phantom run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.kernel.errors import ConfigError
from arenatui.kernel.limits import MAX_CONCURRENCY, MAX_NESTING, MAX_TRIALS
from arenatui.kernel.text import printable
from arenatui.project import load_project

MODEL = '[[models]]\nkey = "a"\nprovider = "sim"\n'
CASE = '[[cases]]\nid = "q1"\ninput = "2+2?"\nexpected = "4"\n'


def project(tmp_path: Path, text: str, **files: str | bytes) -> Path:
    for name, content in files.items():
        p = tmp_path / name.replace("__", ".")
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", newline="")
    p = tmp_path / "arena.toml"
    p.write_text(text, encoding="utf-8")
    return p


def load_error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as ei:
        load_project(path)
    return ei.value


def cli_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return " ".join(err.split())  # the paragraph is wrapped at 100 columns


# ---- 1. CSV case files ---------------------------------------------------------------------------------------


def csv_project(tmp_path: Path, content: str | bytes) -> Path:
    return project(tmp_path, 'cases_file = "cases.csv"\n' + MODEL, cases__csv=content)


def test_csv_keeps_line_breaks_inside_quoted_fields(tmp_path: Path) -> None:
    p = csv_project(tmp_path, 'id,input,expected\na,"Line one.\nLine two.",x\nb,"say ""hi"", then go",y\n')
    cases = load_project(p).cases
    assert [c.id for c in cases] == ["a", "b"]
    assert cases[0].input == "Line one.\nLine two."
    assert cases[1].input == 'say "hi", then go'


def test_csv_keeps_crlf_line_breaks_inside_quoted_fields(tmp_path: Path) -> None:
    p = csv_project(tmp_path, b'id,input,expected\r\na,"one\r\ntwo",x\r\nb,plain,y\r\n')
    cases = load_project(p).cases
    assert cases[0].input == "one\r\ntwo" and cases[1].input == "plain"


def test_csv_keeps_a_long_context_prompt(tmp_path: Path) -> None:
    long = "word " * 100_000  # 500 KB: past the csv module's default field limit
    p = csv_project(tmp_path, f'id,input\nq,"{long}"\n')
    assert load_project(p).cases[0].input == long


def test_csv_accepts_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    p = csv_project(tmp_path, "\ufeffid,input,expected\nq,Caf\u00e9?,oui\n".encode())
    (case,) = load_project(p).cases
    assert case.id == "q" and case.input == "Café?" and case.expected == "oui"
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='\ufeff{"id": "j", "input": "x"}\r\n'.encode())
    assert [c.id for c in load_project(p).cases] == ["j"]


@pytest.mark.parametrize(("content", "line", "words"), [
    ('id,input,expected\na,"unterminated,x\nb,y,z\n', "line 2", "not valid CSV"),
    ('id,input,expected\na,"x"y,z\n', "line 2", "not valid CSV"),
    ("id,input,expected\na,b,c\nd,e,f,extra\n", "line 3", "has 4 fields, the header has 3"),
    ("id,input,expected\na,b,c\nd,e\n", "line 3", "has 2 fields, the header has 3"),
    ('id,input,expected\na,"two\nlines",c\nd,e,f,g\n', "line 4", "has 4 fields"),
    ("id,,expected\na,b,c\n", "line 1", "empty column name"),
])
def test_malformed_csv_names_file_and_line(tmp_path: Path, content: str, line: str, words: str) -> None:
    e = load_error(csv_project(tmp_path, content))
    assert e.file == str(tmp_path / "cases.csv")
    assert e.key == line and words in e.expected


def test_malformed_csv_through_the_cli_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = csv_project(tmp_path, "id,input,expected\na,b,c\nd,e,f,extra\n")
    err = cli_error(["evaluate", "-p", str(p), "--db", str(tmp_path / "r.db"), "-q"], capsys)
    assert "cases.csv: line 3" in err
    assert not (tmp_path / "r.db").exists()


def test_a_non_string_id_says_so(tmp_path: Path) -> None:
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='{"id": 1.5, "input": "x"}\n')
    e = load_error(p)
    assert e.key == "line 1.id"
    assert "expected a string or whole number" in e.expected and "1.5" in e.expected
    assert "required" not in e.expected
    e = load_error(project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='{"input": "x"}\n'))
    assert "is required" in e.expected
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='{"id": 7, "input": "x"}\n')
    assert load_project(p).cases[0].id == "7"


def test_jsonl_keeps_line_separator_characters_inside_strings(tmp_path: Path) -> None:
    # str.splitlines() would cut this line at U+2028 and report invalid JSON.
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL,
                c__jsonl=json.dumps({"id": "a", "input": "x\u2028y\x1cz"}, ensure_ascii=False) + "\n")
    assert load_project(p).cases[0].input == "x\u2028y\x1cz"


# ---- 2. lone surrogates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "key"), [
    ({"id": "bad\ud800id", "input": "x"}, "line 2.id"),
    ({"id": "a", "input": "x\udfff"}, "line 2.input"),
    ({"id": "a", "input": "x", "expected": "\ud800"}, "line 2.expected"),
    ({"id": "a", "input": [{"role": "user", "content": "\ud800"}]}, "line 2.input[0].content"),
    ({"id": "a", "input": "x", "tags": ["ok", "b\ud800"]}, "line 2.tags[1]"),
    ({"id": "a", "input": "x", "stratum": "\ud800"}, "line 2.stratum"),
])
def test_lone_surrogate_in_jsonl_is_rejected_at_load(tmp_path: Path, row: dict[str, object], key: str) -> None:
    lines = json.dumps({"id": "fine", "input": "y"}) + "\n" + json.dumps(row) + "\n"  # json.dumps escapes it
    e = load_error(project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl=lines))
    assert e.file == str(tmp_path / "c.jsonl") and e.key == key
    assert "lone surrogate" in e.expected


def test_a_surrogate_pair_is_fine(tmp_path: Path) -> None:
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='{"id": "a", "input": "smile \\ud83d\\ude00"}\n')
    assert load_project(p).cases[0].input == "smile \U0001f600"


def test_lone_surrogate_in_toml_and_csv_is_rejected(tmp_path: Path) -> None:
    e = load_error(project(tmp_path, MODEL + '[[cases]]\nid = "bad\\ud800id"\ninput = "x"\n'))
    assert e.file == str(tmp_path / "arena.toml")
    # CSV and raw TOML bytes: a surrogate encoded as UTF-8 is not UTF-8 at all.
    e = load_error(csv_project(tmp_path, b"id,input\nbad\xed\xa0\x80id,x\n"))
    assert e.file == str(tmp_path / "cases.csv") and "cannot be read" in e.expected


def test_lone_surrogate_through_the_cli_leaves_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl='{"id": "bad\\ud800id", "input": "x"}\n')
    err = cli_error(["evaluate", "-p", str(p), "--db", str(tmp_path / "r.db"), "-q"], capsys)
    assert "c.jsonl: line 1.id" in err and "lone surrogate" in err
    assert not (tmp_path / "r.db").exists()


# ---- 3. nan and inf -------------------------------------------------------------------------------------------


FLOAT_KEYS = [
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\nprice_in_per_mtok = {v}\n", "models[0].price_in_per_mtok"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\nprice_out_per_mtok = {v}\n", "models[0].price_out_per_mtok"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\nrpm = {v}\n", "models[0].rpm"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\ntpm = {v}\n", "models[0].tpm"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\ntemperature = {v}\n", "models[0].temperature"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.sim]\naccuracy = {v}\n", "models[0].sim.accuracy"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.sim]\nrpm = {v}\n", "models[0].sim.rpm"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.sim]\nbase_latency_s = {v}\n", "models[0].sim.base_latency_s"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.sim]\njitter = {v}\n", "models[0].sim.jitter"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.sim.strata_accuracy]\nhard = {v}\n",
     "models[0].sim.strata_accuracy.hard"),
    ("[[models]]\nkey = 'a'\nprovider = 'sim'\n[models.extra_body]\ntop_p = {v}\n", "models[0].extra_body.top_p"),
    (MODEL + "[run]\ntimeout_s = {v}\n", "run.timeout_s"),
    (MODEL + "[run]\nbackoff_base_s = {v}\n", "run.backoff_base_s"),
    (MODEL + "[run]\nbackoff_cap_s = {v}\n", "run.backoff_cap_s"),
    (MODEL + "[run]\nretry_budget_s = {v}\n", "run.retry_budget_s"),
    (MODEL + "[defaults]\ntemperature = {v}\n", "defaults.temperature"),
    (MODEL + "[[scorers]]\nkind = 'numeric'\ntolerance = {v}\n", "scorers[0].tolerance"),
    (MODEL + "[mock.models.a]\nretry_after_s = {v}\n", "mock.models.a.retry_after_s"),
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
@pytest.mark.parametrize(("snippet", "key"), FLOAT_KEYS)
def test_every_float_key_rejects_nan_and_inf(tmp_path: Path, snippet: str, key: str, value: str) -> None:
    e = load_error(project(tmp_path, CASE + snippet.format(v=value)))
    assert e.key == key
    assert "finite number" in e.expected


def test_nan_in_a_jsonl_case_is_rejected(tmp_path: Path) -> None:
    e = load_error(project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL,
                           c__jsonl='{"id": "a", "input": "x", "expected": NaN}\n'))
    assert e.key == "line 1.expected" and "finite number" in e.expected


def test_nan_price_through_the_cli_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = project(tmp_path, CASE + "[[models]]\nkey = 'a'\nprovider = 'sim'\nprice_in_per_mtok = nan\n")
    err = cli_error(["evaluate", "-p", str(p), "--db", str(tmp_path / "r.db"), "-q"], capsys)
    assert "models[0].price_in_per_mtok: expected a finite number, got nan" in err


# ---- 10. numeric bounds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("snippet", "key", "words"), [
    (MODEL + "[run]\ntrials = 65536\n", "run.trials", f"<= {MAX_TRIALS}"),
    (MODEL + "[run]\nconcurrency = 1000000\n", "run.concurrency", f"<= {MAX_CONCURRENCY}"),
    (MODEL + "[run]\nmax_attempts = 100000\n", "run.max_attempts", "<= 100"),
    ("[[models]]\nkey = 'a'\nmax_concurrency = 1000000\n", "models[0].max_concurrency", f"<= {MAX_CONCURRENCY}"),
    ("[[models]]\nkey = 'a'\nrpm = 1e300\n", "models[0].rpm", "<= 1e+07"),
    ("[[models]]\nkey = 'a'\ntpm = 1e300\n", "models[0].tpm", "<= 1e+07"),
    ("[[models]]\nkey = 'a'\n[models.sim]\nrpm = 1e300\n", "models[0].sim.rpm", "<= 1e+07"),
    ("[[models]]\nkey = 'a'\nrpm = 1e-300\n", "models[0].rpm", ">= 1"),  # the limiter could never admit one
    ("[[models]]\nkey = 'a'\ntpm = 0.5\n", "models[0].tpm", ">= 1"),
    ("[[models]]\nkey = 'a'\n[models.sim]\nmax_concurrent = 9999999\n", "models[0].sim.max_concurrent",
     f"<= {MAX_CONCURRENCY}"),
])
def test_numbers_in_the_project_are_bounded(tmp_path: Path, snippet: str, key: str, words: str) -> None:
    e = load_error(project(tmp_path, CASE + snippet))
    assert e.key == key and words in e.expected


@pytest.mark.parametrize(("args", "words"), [
    (["--trials", "65536"], f"--trials: expected a whole number <= {MAX_TRIALS}, got 65536"),
    (["-c", "1000000"], f"expected a whole number <= {MAX_CONCURRENCY}, got 1000000"),
    (["--trials", "0"], "expected a whole number >= 1"),
    (["-c", "many"], "expected a whole number, got 'many'"),
])
def test_cli_flags_are_bounded_and_leave_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                                words: str) -> None:
    p = project(tmp_path, MODEL + CASE)
    db = tmp_path / "r.db"
    for command in ("evaluate", "run"):
        with pytest.raises(SystemExit) as ei:
            main([command, "-p", str(p), "--db", str(db), *args])
        assert ei.value.code == 2
        err = " ".join(capsys.readouterr().err.split())
        assert words in err and "Traceback" not in err
    assert not db.exists()


def test_a_bounded_trials_value_still_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = project(tmp_path, MODEL.replace('"sim"\n', '"sim"\n[models.sim]\nbase_latency_s = 0.0\nper_token_s = 0.0\n'
                                       'jitter = 0.0\n') + CASE)
    db = tmp_path / "r.db"
    assert main(["evaluate", "-p", str(p), "--db", str(db), "-q", "--trials", "3", "-c", str(MAX_CONCURRENCY)]) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (3,)


def test_runs_limit_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ei:
        main(["runs", "--db", str(tmp_path / "r.db"), "--limit", "99999999999999999999"])
    assert ei.value.code == 2
    assert "--limit: expected a whole number <=" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_mock_server_port_is_bounded(capsys: pytest.CaptureFixture[str], port: str) -> None:
    with pytest.raises(SystemExit) as ei:
        main(["mock-server", "--port", port])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "--port" in err and "Traceback" not in err


# ---- 12. deep nesting -----------------------------------------------------------------------------------------


def test_a_toml_array_5000_deep_is_a_clear_error(tmp_path: Path) -> None:
    e = load_error(project(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n" + MODEL + CASE))
    assert e.file == str(tmp_path / "arena.toml") and "nested too deeply" in e.expected


def test_a_jsonl_line_100000_deep_is_a_clear_error(tmp_path: Path) -> None:
    deep = '{"id": "a", "input": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    lines = '{"id": "ok", "input": "y"}\n' + deep
    e = load_error(project(tmp_path, 'cases_file = "c.jsonl"\n' + MODEL, c__jsonl=lines))
    assert e.key == "line 2" and "nested too deeply" in e.expected


def test_nesting_past_the_bound_but_within_the_parser_is_caught_too(tmp_path: Path) -> None:
    depth = MAX_NESTING + 5
    e = load_error(project(tmp_path, MODEL + "[models.extra_body]\nx = " + "[" * depth + "]" * depth + "\n" + CASE))
    assert e.key is not None and e.key.startswith("models[0].extra_body.x[0]") and "nested too deeply" in e.expected
    ok = project(tmp_path, MODEL + "[models.extra_body]\nx = [[[1]]]\n" + CASE)
    assert load_project(ok).models[0].extra_body == {"x": [[[1]]]}


def test_deep_nesting_through_the_cli_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = project(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n" + MODEL + CASE)
    err = cli_error(["evaluate", "-p", str(p), "--db", str(tmp_path / "r.db")], capsys)
    assert "nested too deeply" in err


# ---- 24. zero-width and bidi marks ----------------------------------------------------------------------------


@pytest.mark.parametrize("mark", ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c",
                                  "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\ufeff"])
def test_zero_width_and_bidi_marks_are_shown_as_escapes(mark: str) -> None:
    shown = printable(f"pay{mark}pal")
    assert mark not in shown
    assert shown == f"pay\\u{ord(mark):04x}pal"


def test_ordinary_text_is_unchanged() -> None:
    s = "Café — naïve 東京 \U0001f600 x\ty\nz"
    assert printable(s) == s


# ---- 19, 20. credentials in URLs, error bodies and headers ------------------------------------------------------


@pytest.mark.parametrize(("url", "shown"), [
    ("http://user:pw@host/v1", "http://[redacted]@host/v1"),
    ("https://h:8443/v1?api_key=s3cr3t&model=x", "https://h:8443/v1?api_key=[redacted]&model=x"),
    ("https://h/v1?key=a&token=b&access_token=c&sig=d&X-Amz-Signature=e&api-version=2024",
     "https://h/v1?key=[redacted]&token=[redacted]&access_token=[redacted]&sig=[redacted]"
     "&X-Amz-Signature=[redacted]&api-version=2024"),
    ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ("http://u:p@h:notaport/v1", "http://[redacted]@h:notaport/v1"),
])
def test_redact_url(url: str, shown: str) -> None:
    from arenatui.kernel.redact import redact_url

    assert redact_url(url) == shown


@pytest.mark.parametrize("echo", [
    "Authorization: Basic dXNlcjpwdw==",
    '{"Authorization": "Basic dXNlcjpwdw=="}',
    "authorization=Digest dXNlcjpwdw==",
    "'Proxy-Authorization': 'Bearer dXNlcjpwdw=='",
    "Authorization: AWS4-HMAC-SHA256 dXNlcjpwdw==",
    "failed for http://user:dXNlcjpwdw==@host/v1",
    "GET https://h/v1?access_token=dXNlcjpwdw== 401",
])
def test_scrub_removes_whole_authorization_values_and_url_credentials(echo: str) -> None:
    from arenatui.providers.http import scrub

    out = scrub(echo)
    assert "dXNlcjpwdw" not in out and "[redacted]" in out
    assert "Basic" not in out and "Digest" not in out and "AWS4" not in out


def test_httpx_request_logs_lose_url_credentials(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    import arenatui.providers.http  # noqa: F401  (installs the filter)

    caplog.set_level(logging.INFO, logger="httpx")
    logging.getLogger("httpx").info('HTTP Request: %s %s "%s"', "POST", "http://h/v1?api_key=zz9secret", "200 OK")
    assert "zz9secret" not in caplog.text and "api_key=[redacted]" in caplog.text


def test_stored_project_holds_header_names_and_redacted_urls(tmp_path: Path) -> None:
    from arenatui.project import project_to_dict

    p = project(tmp_path, CASE + '[[models]]\nkey = "a"\nprovider = "openai"\n'
                'base_url = "http://bob:hunter2@h/v1?api_key=abc"\n'
                'headers = {X-Goog-Api-Key = "g00gsecret", Cookie = "sid=c00kie"}\n'
                'headers_env = {X-Other = "ARENA_OTHER"}\n')
    proj = load_project(p)
    assert proj.models[0].headers == {"X-Goog-Api-Key": "g00gsecret", "Cookie": "sid=c00kie"}
    stored = json.dumps(project_to_dict(proj))
    for secret in ("hunter2", "bob", "abc", "g00gsecret", "c00kie"):
        assert secret not in stored
    m = project_to_dict(proj)["models"][0]
    assert m["headers"] == {"X-Goog-Api-Key": "[redacted]", "Cookie": "[redacted]"}
    assert m["headers_env"] == {"X-Other": "ARENA_OTHER"}
    assert m["base_url"] == "http://[redacted]@h/v1?api_key=[redacted]"


@pytest.mark.parametrize(("snippet", "key", "words"), [
    ('headers_env = {X-Key = "not a name"}\n', "models[0].headers_env.X-Key", "NAME of an environment variable"),
    ('headers_env = {"bad header" = "VAR"}\n', "models[0].headers_env.bad header", "HTTP header name"),
    ('headers = {X-Key = "v"}\nheaders_env = {x-key = "VAR"}\n', "models[0].headers_env.x-key", "also set"),
    ('headers = {Authorization = "Bearer x"}\n', "models[0].headers.Authorization", "headers_env"),
])
def test_headers_env_is_validated(tmp_path: Path, snippet: str, key: str, words: str) -> None:
    e = load_error(project(tmp_path, CASE + '[[models]]\nkey = "a"\nprovider = "openai"\n' + snippet))
    assert e.key == key and words in e.expected


def test_headers_env_values_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arenatui.kernel.errors import ProviderSetupError
    from arenatui.project import load_project as load
    from arenatui.providers.registry import make_provider

    p = project(tmp_path, CASE + '[[models]]\nkey = "a"\nprovider = "openai"\nbase_url = "http://u:p@127.0.0.1:9/v1"\n'
                'headers_env = {X-Goog-Api-Key = "ARENA_GOOG"}\n')
    proj = load(p)
    monkeypatch.delenv("ARENA_GOOG", raising=False)
    with pytest.raises(ProviderSetupError) as ei:
        make_provider(proj.models[0], proj.run)
    assert "ARENA_GOOG" in str(ei.value) and "X-Goog-Api-Key" in str(ei.value)
    with pytest.raises(ProviderSetupError) as ei:  # given its project, the error says where to fix it
        make_provider(proj.models[0], proj.run, project=proj)
    assert str(ei.value).startswith(f"{p}: models[0].headers_env.X-Goog-Api-Key: model 'a' reads its X-Goog-Api-Key")
    monkeypatch.setenv("ARENA_GOOG", "from-env-value")
    prov = make_provider(proj.models[0], proj.run)
    headers = prov._headers  # type: ignore[attr-defined]
    assert headers["X-Goog-Api-Key"] == "from-env-value"
    assert headers["authorization"] == "Basic dTpw"  # u:p, sent as a header: never in a logged URL
    assert prov.url == "http://127.0.0.1:9/v1/chat/completions"  # type: ignore[attr-defined]


# ---- 22. arena runs never cuts a run id -------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["80", "40", None])
def test_arena_runs_never_cuts_run_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    from arenatui.store import Store

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # piped: Rich assumes 80
    else:
        monkeypatch.setenv("COLUMNS", columns)
    db = tmp_path / "r.db"
    with Store(db) as store:
        ids = [store.create_run("a-project-name-long-enough-to-squeeze-every-other-column-of-the-table" * k,
                                "p.toml", {}, {}, 10) for k in (1, 2)]
        ids.append(store.create_run("short", "p.toml", {}, {}, 10))
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    for run_id in ids:
        assert run_id in out, out
    assert "…" not in out


# ---- 14. arena init onto a file, an existing project, a path it cannot write ------------------------------------


def test_init_onto_an_existing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("mine", encoding="utf-8")
    err = cli_error(["init", str(f)], capsys)
    assert f"{f} is a file, not a directory" in err
    assert f.read_text(encoding="utf-8") == "mine"
    err = cli_error(["init", str(f / "sub")], capsys)  # a path through a file
    assert "cannot write the starter project" in err and "Not a directory" in err


def test_init_onto_an_existing_project_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "arena.toml").write_text("# mine\n", encoding="utf-8")
    err = cli_error(["init", str(tmp_path)], capsys)
    assert "arena.toml already exists; pass --force" in err
    assert (tmp_path / "arena.toml").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "cases.jsonl").exists()
    assert main(["init", str(tmp_path), "--force"]) == 0
    assert load_project(tmp_path).name == "my-eval"


def test_init_onto_a_read_only_path_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root, which ignores permission bits: make the file system refuse as a read-only one does.
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    err = cli_error(["init", str(tmp_path / "new")], capsys)
    assert f"cannot write the starter project into {tmp_path / 'new'}" in err and "Read-only file system" in err


def test_init_template_documents_headers_env(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    text = (tmp_path / "arena.toml").read_text(encoding="utf-8")
    assert "headers_env" in text


def test_a_query_in_base_url_follows_the_endpoint_path(tmp_path: Path) -> None:
    from arenatui.providers.registry import make_provider

    p = project(tmp_path, CASE + '[[models]]\nkey = "a"\nprovider = "openai"\n'
                'base_url = "http://127.0.0.1:9/v1/?api-version=2024-06&key=gw"\n'
                '[[models]]\nkey = "b"\nprovider = "anthropic"\nbase_url = "http://127.0.0.1:9?token=t"\n')
    proj = load_project(p)
    a, b = (make_provider(m, proj.run) for m in proj.models)
    assert a.url == "http://127.0.0.1:9/v1/chat/completions?api-version=2024-06&key=gw"  # type: ignore[attr-defined]
    assert b.url == "http://127.0.0.1:9/v1/messages?token=t"  # type: ignore[attr-defined]

"""`arena judge-check` (issue 20, item 7): a judge's agreement with verdicts known in advance, with its interval and
n; the judge's own failures shown as its errors, never counted as disagreements."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.commands.judge_check import wilson_interval

PROJECT = """
[project]
name = "judge-check"

[run]
seed = 3
max_attempts = 2
backoff_base_s = 0.01

[[models]]
key = "cand"
provider = "sim"

[[models]]
key = "grader"
{grader}

[[scorers]]
name = "judge"
kind = "llm_judge"
judge = "grader"
rubric = "Question: {{input}}\\nReference: {{expected}}\\nAnswer: {{output}}\\nIs the answer right?"
scale = "{scale}"

{cases}
"""

SIM = ('provider = "sim"\nsim = {{ base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = {accuracy} }}')


def cases(n: int, scale: str) -> str:
    good, bad = ("5", "1") if scale == "1-5" else ('"PASS"', '"FAIL"')
    return "\n".join(
        f'[[cases]]\nid = "c{i}"\ninput = "Name item {i}."\nexpected = "item-{i}"\n'
        f'judge_expected = [{{ answer = "It is item-{i}.", verdict = {good} }}, '
        f'{{ answer = "It is something else.", verdict = {bad} }}]\n' for i in range(n))


def write(tmp_path: Path, *, accuracy: float = 1.0, scale: str = "1-5", n: int = 5, grader: str | None = None) -> Path:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT.format(grader=grader or SIM.format(accuracy=accuracy), scale=scale, cases=cases(n, scale)))
    return p


def test_wilson_interval_matches_the_textbook_values() -> None:
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)  # Newcombe (1998), table I: 0.4902-0.9433
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and round(lo, 3) == 0.722
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("scale", ["1-5", "pass/fail"])
def test_a_judge_that_is_always_right_agrees_on_every_known_verdict(tmp_path: Path, scale: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge-check", "-p", str(write(tmp_path, scale=scale))]) == 0
    out = capsys.readouterr().out
    assert f"Judge check: scorer judge, judged by grader (scale {scale})" in out
    assert "agreement on pass/fail: 1.000 (95% Wilson interval 0.722-1.000), n = 10" in out
    assert "judge errors" not in out and "disagreements" not in out
    assert ("same verdict: 10 of 10" in out) is (scale == "1-5")


def test_a_judge_that_fails_shows_its_own_errors_apart_from_disagreements(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # accuracy 0: each verdict is flipped or unreadable (the simulated judge's two ways of being wrong)
    assert main(["judge-check", "-p", str(write(tmp_path, accuracy=0.0, n=10))]) == 0
    out = capsys.readouterr().out
    errors = int(out.split("judge errors: ")[1].split()[0])
    wrong = int(out.split("disagreements: ")[1].split()[0])
    assert errors > 0 and wrong > 0 and errors + wrong == 20
    assert f"agreement on pass/fail: 0.000 (95% Wilson interval 0.000-{wilson_interval(0, wrong)[1]:.3f}), " \
           f"n = {wrong}" in out
    assert "(the judge's own failures, not counted in n)" in out
    assert "no final verdict line 'VERDICT: N'" in out  # each error says what the judge got wrong


def test_a_judge_whose_calls_fail_is_reported_as_the_judges_errors(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    grader = ('provider = "sim"\nsim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, '
              'transient_rate = 1.0 }')
    assert main(["judge-check", "-p", str(write(tmp_path, grader=grader, n=2))]) == 0
    out = capsys.readouterr().out
    assert "not enough evidence: the judge gave no verdict on any known answer" in out
    assert "judge errors: 4" in out and "the judge's call failed (TransientError)" in out


def test_known_verdicts_are_checked_when_the_project_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, n=1)
    p.write_text(p.read_text().replace("verdict = 5", "verdict = 7"))
    assert main(["judge-check", "-p", str(p)]) == 2
    err = capsys.readouterr().err
    assert "cases[0].judge_expected[0].verdict: expected a number on the scale 1-5" in err and "got '7'" in err
    assert "Traceback" not in err
    p.write_text(p.read_text().replace('kind = "llm_judge"', 'kind = "exact"').replace('judge = "grader"\n', "")
                 .replace("rubric =", "# rubric =").replace('scale = "1-5"', ""))
    assert main(["judge-check", "-p", str(p)]) == 2
    assert "judge_expected: applies to cases scored by an llm_judge scorer" in capsys.readouterr().err


def test_a_project_without_known_verdicts_says_what_to_add(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, n=1)
    p.write_text(p.read_text().split("judge_expected")[0])
    assert main(["judge-check", "-p", str(p)]) == 2
    assert "no case has judge_expected" in " ".join(capsys.readouterr().err.split())


def test_the_judge_check_over_http_reads_the_mock_servers_verdict_lines(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The rubric does not ask for the verdict line: the request appended to it is what the mock server reads back
    (its rubric pattern) and answers in the VERDICT format, over the real OpenAI wire."""
    from httpkit import start_server, stop_server

    grader = ('provider = "openai"\nmodel = "grader"\nbase_url = "{url}/v1"\n'
              'sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }')
    p = write(tmp_path, grader=grader.replace("{url}", "http://127.0.0.1:1"), n=3)
    proc, m, _lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                    str(p)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        p.write_text(p.read_text().replace("http://127.0.0.1:1", m.group(1)))
        assert main(["judge-check", "-p", str(p)]) == 0
    finally:
        stop_server(proc)
    out = capsys.readouterr().out
    assert "agreement on pass/fail: 1.000" in out and "n = 6" in out and "judge errors" not in out


def test_known_verdicts_are_stored_with_a_run_and_read_back(tmp_path: Path) -> None:
    from arenatui.project import load_project, project_from_dict, project_to_dict

    p = load_project(write(tmp_path, n=2, scale="pass/fail"))
    back = project_from_dict(project_to_dict(p), p.path)
    assert [c.judge_expected for c in back.cases] == [c.judge_expected for c in p.cases]
    assert back.cases[0].judge_expected == (("It is item-0.", "PASS"), ("It is something else.", "FAIL"))

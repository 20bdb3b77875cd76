"""Conformance against a server we did not write: llama-cpp-python's OpenAI-compatible server (`python -m
llama_cpp.server`, default settings, one thread) serving Gemma 3 270M from a PyPI package.

Each test first records what the server sends (a raw client, bytes as they came), then what arenatui stores for it:
the README's "Against real servers" table, row by row. Skips, saying what to install, when the server is absent.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpkit import run_sweep, write_project
from realservers import MODEL_ALIAS, Server, chat, llama_server, open_request, post, read_response, servers

pytestmark = [servers, pytest.mark.timeout(600)]

COUNT = "Count from 1 to 200, separated by commas."
"""A prompt the model answers at length: a stream long enough to be interrupted."""

CASES: list[dict[str, Any]] = [
    {"id": "capital", "input": "What is the capital of France?", "expected": "Paris"},
    {"id": "colour", "input": "What colour is the sky on a clear day?", "expected": "blue"},
    {"id": "count", "input": "Count from 1 to 5.", "expected": "3"},
    {"id": "opposite", "input": "What is the opposite of hot?", "expected": "cold"},
    {"id": "animal", "input": "What animal says moo?", "expected": "cow"},
    {"id": "planet", "input": "Which planet do we live on?", "expected": "Earth"},
]


@pytest.fixture(scope="module")
def llama() -> Iterator[Server]:
    yield from llama_server()


def _model(key: str, stream: bool, **kw: Any) -> dict[str, Any]:
    # 8 tokens: the base model rambles to the limit, so this sets how long a call takes (a few seconds here)
    return {"key": key, "provider": "openai", "model": MODEL_ALIAS, "stream": stream, "max_tokens": 8, **kw}


def _sweep(tmp_path: Path, llama: Server, models: list[dict[str, Any]], **run: Any) -> Any:
    return run_sweep(tmp_path, llama.url, models, run={"timeout_s": 120.0, "backoff_base_s": 0.05,
                                                        "backoff_cap_s": 0.5, **run})


# ---- what it sends, and what arenatui records ----------------------------------------------------------------


def test_a_plain_answer_carries_usage_and_its_finish_reason(llama: Server, tmp_path: Path) -> None:
    raw = post(llama.url, "/v1/chat/completions", chat("What is the capital of France?", max_tokens=16))
    assert raw.status == 200
    body = raw.json()
    (choice,) = body["choices"]
    assert choice["finish_reason"] in ("stop", "length")
    assert isinstance(choice["message"]["content"], str)
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0
    # arenatui: the server's token counts, not an estimate; its finish reason as sent
    out = _sweep(tmp_path, llama, [_model("ns", stream=False)], concurrency=1)
    for r in out.rows.values():
        assert r["status"] in ("passed", "failed") and r["error_class"] is None
        assert r["tokens_estimated"] == 0 and r["input_tokens"] > 0
        assert r["finish_reason"] in ("stop", "length")


def test_a_stream_has_a_role_chunk_a_finish_reason_and_no_usage_even_when_asked(llama: Server,
                                                                                 tmp_path: Path) -> None:
    raw = post(llama.url, "/v1/chat/completions", chat("What is the capital of France?", max_tokens=16, stream=True,
                                                       stream_options={"include_usage": True}))
    assert raw.status == 200 and raw.headers["content-type"].startswith("text/event-stream")
    chunks = raw.chunks()
    assert raw.events[-1] == "[DONE]"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[0]["choices"][0]["finish_reason"] is None
    assert raw.finish_reasons[-1] in ("stop", "length") and all(f is None for f in raw.finish_reasons[:-1])
    # stream_options.include_usage is not honoured: no chunk carries usage
    assert not [c for c in chunks if c.get("usage")]
    # arenatui: an answer with the finish reason as sent; tokens estimated (and flagged so)
    out = _sweep(tmp_path, llama, [_model("st", stream=True)], concurrency=1)
    for r in out.rows.values():
        assert r["status"] in ("passed", "failed") and r["error_class"] is None, r
        assert r["finish_reason"] in ("stop", "length")
        assert r["tokens_estimated"] == 1 and r["ttft_ms"] is not None


def test_a_streams_estimated_input_counts_the_chat_template_as_the_server_does(llama: Server,
                                                                              tmp_path: Path) -> None:
    """The server counts its chat template (Gemma's turn markers) in prompt_tokens; a stream reports no usage, so
    arenatui estimates it, with the template's tokens measured once through /extras/tokenize/count and a one-token
    answer (the server's Gemma template drops the system prompt: the measure is below 0 here)."""
    out = _sweep(tmp_path, llama, [_model("st", stream=True), _model("ns", stream=False)], concurrency=1)
    counted = {case: r["input_tokens"] for (m, case, _), r in out.rows.items() if m == "ns"}
    estimated = {case: r["input_tokens"] for (m, case, _), r in out.rows.items() if m == "st"}
    assert counted.keys() == estimated.keys() and counted
    assert all(r["tokens_estimated"] == (m == "st") for (m, _, _), r in out.rows.items())
    # the text's own tokens are still 4 characters each (digits are one token each here: 17 + 25 is 7), the
    # template's are the server's: over the cases within 15% of its count, each case within 35%
    assert abs(sum(estimated.values()) - sum(counted.values())) <= 0.15 * sum(counted.values()), (estimated, counted)
    for case, n in counted.items():
        assert abs(estimated[case] - n) <= 0.35 * n, (case, estimated[case], n)


def test_max_tokens_ends_with_finish_reason_length(llama: Server, tmp_path: Path) -> None:
    for stream in (False, True):
        raw = post(llama.url, "/v1/chat/completions", chat(COUNT, max_tokens=4, stream=stream))
        finish = raw.finish_reasons[-1] if stream else raw.json()["choices"][0]["finish_reason"]
        assert finish == "length"
    out = _sweep(tmp_path, llama, [_model("st", stream=True, max_tokens=4), _model("ns", stream=False, max_tokens=4)],
                 concurrency=1)
    for r in out.rows.values():
        assert r["finish_reason"] == "length", r


def test_no_rate_limit_headers_and_no_reasoning_fields(llama: Server) -> None:
    for stream in (False, True):
        raw = post(llama.url, "/v1/chat/completions", chat("Hello", max_tokens=8, stream=stream))
        assert not [h for h in raw.headers if "ratelimit" in h or h.startswith("retry-after")], raw.headers
        if stream:
            deltas = [c.get("delta") or {} for ch in raw.chunks() for c in ch["choices"]]
            assert not [d for d in deltas if "reasoning_content" in d or "reasoning" in d]
        else:
            msg = raw.json()["choices"][0]["message"]
            assert "reasoning_content" not in msg and "reasoning" not in msg


def test_its_tokenizer_is_at_extras_tokenize(llama: Server) -> None:
    raw = post(llama.url, "/extras/tokenize", {"input": "What is the capital of France?", "model": MODEL_ALIAS})
    assert raw.status == 200 and all(isinstance(t, int) for t in raw.json()["tokens"])
    count = post(llama.url, "/extras/tokenize/count", {"input": "What is the capital of France?"})
    assert count.json()["count"] == len(raw.json()["tokens"])
    # llama.cpp's own server answers /tokenize; this one does not
    assert post(llama.url, "/tokenize", {"content": "x"}).status == 404


def _interrupted_stream(llama: Server) -> Any:
    """A long stream, and a second request sent once the first has sent its role chunk."""
    first = open_request(llama.url, "/v1/chat/completions", chat(COUNT, max_tokens=200, stream=True))
    started = threading.Event()
    second: list[Any] = []

    def send_second() -> None:
        started.wait(60)
        second.append(post(llama.url, "/v1/chat/completions", chat("Hello", max_tokens=4)))

    t = threading.Thread(target=send_second)
    t.start()
    raw = read_response(first, on_event=lambda _: started.set())
    t.join(120)
    return raw, second[0]


def test_a_second_request_interrupts_a_stream_role_chunk_then_done_without_a_finish_reason(llama: Server) -> None:
    before = _interruptions(llama)
    raw, second = _interrupted_stream(llama)
    assert raw.status == 200 and raw.events[-1] == "[DONE]"
    assert raw.chunks()[0]["choices"][0]["delta"] == {"role": "assistant"}
    # interrupted: no choice carries a finish reason, and the answer is cut short (the model counts to 200)
    assert all(f is None for f in raw.finish_reasons), raw.events
    assert len(raw.text) < 100
    assert second.status == 200 and second.json()["choices"][0]["finish_reason"] in ("stop", "length")
    assert _interruptions(llama) == before + 1


def test_non_streamed_requests_queue_and_are_never_interrupted(llama: Server, tmp_path: Path) -> None:
    out = _sweep(tmp_path, llama, [_model("ns", stream=False)], concurrency=4)
    rows = list(out.rows.values())
    assert len(rows) == len(out.rows) > 0
    for r in rows:
        assert r["error_class"] is None and r["finish_reason"] in ("stop", "length") and r["attempts"] == 1, r


def test_at_concurrency_4_no_interrupted_stream_is_stored_as_an_answer(llama: Server, tmp_path: Path) -> None:
    before = _interruptions(llama)
    out = _sweep(tmp_path, llama, [_model("st", stream=True)], concurrency=4, max_attempts=8)
    interrupted = _interruptions(llama) - before
    for r in out.rows.values():
        if r["error_class"] is None:
            # an answer is one the server finished
            assert r["finish_reason"] in ("stop", "length") and r["output"], r
        else:
            assert r["error_class"] == "incomplete_stream", r
    with sqlite3.connect(out.db) as c:
        failed = c.execute("SELECT error_class FROM failed_attempts WHERE run_id = ?", (out.run_id,)).fetchall()
    # every stream the server interrupted is a failed attempt (retried), whatever text it carried: none is an answer
    assert interrupted > 0 and len(failed) == interrupted and {k for (k,) in failed} == {"incomplete_stream"}


def _interruptions(llama: Server) -> int:
    """Streams the server has interrupted so far (it logs each one)."""
    return sum("Disconnected from client (via refresh/close)" in line and "before llm invoked" not in line
               for line in llama.lines)


# ---- through the command line ---------------------------------------------------------------------------------


def test_arena_evaluate_one_at_a_time_answers_every_case(llama: Server, tmp_path: Path) -> None:
    project = write_project(tmp_path / "arena.toml", llama.url, [_model("gemma", stream=True)],
                            run={"concurrency": 1, "timeout_s": 120.0})
    _with_cases(project, CASES)
    db = tmp_path / "r.db"
    done = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--project", str(project), "--db", str(db),
                           "--quiet", "--no-report"], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT status, error_class, finish_reason, output, tokens_estimated FROM results").fetchall()
    assert len(rows) == len(CASES)
    for status, error_class, finish, output, estimated in rows:
        assert status in ("passed", "failed") and error_class is None
        assert finish in ("stop", "length") and output and estimated == 1


ECHO_CASES = Path(__file__).parent / "data" / "gemma270m_echo.jsonl"
"""Cases the base model answers (it repeats its prompt: copy and continue tasks), and one it does not (a question):
a quality neither 0 nor 1, so that equal quality at two levels means something."""


def test_arena_evaluate_at_concurrency_4_gives_the_quality_of_concurrency_1(llama: Server, tmp_path: Path) -> None:
    """Interrupted streams are retried, never scored: the answers stored at 4 are the server's whole answers, which
    at temperature 0 are those it gives one at a time; so the quality is the same (and not 0: the base model
    answers these)."""
    quality: dict[int, dict[str, bool]] = {}
    for level in (1, 4):
        project = write_project(tmp_path / f"c{level}.toml", llama.url, [_model("gemma", stream=True)],
                                run={"concurrency": level, "timeout_s": 120.0, "max_attempts": 8,
                                     "backoff_base_s": 0.05, "backoff_cap_s": 0.5})
        _with_cases(project, None)
        db = tmp_path / f"c{level}.db"
        done = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--project", str(project), "--db",
                               str(db), "--quiet", "--no-report"], capture_output=True, text=True, timeout=600)
        assert done.returncode in (0, 1), done.stderr
        # at 4 the streams cut one another: the tool says what to change (at 1 nothing is cut, nothing said)
        said = "the server interrupts a stream when another request arrives" in " ".join(done.stderr.split())
        assert said == (level == 4), done.stderr
        with sqlite3.connect(db) as c:
            rows = c.execute("SELECT case_id, status, error_class, output FROM results").fetchall()
        assert all(e in (None, "incomplete_stream") for _, _, e, _ in rows), rows
        quality[level] = {case: status == "passed" for case, status, e, _ in rows if e is None}
    one, four = quality[1], quality[4]
    assert len(one) == 8 and 0 < sum(one.values()) < len(one), one  # every case answered, some right, not all
    assert four and all(four[c] == one[c] for c in four), (one, four)  # each answer at 4 scores as at 1
    # and over the cases: within one case of each other (the interval of 8 cases is far wider)
    assert abs(sum(four.values()) / len(four) - sum(one.values()) / len(one)) <= 1 / len(one) + 1e-9


def _with_cases(project: Path, cases: list[dict[str, Any]] | None) -> None:
    import tomllib

    import tomli_w

    doc = tomllib.loads(project.read_text(encoding="utf-8"))
    if cases is None:  # the echo case file
        doc.pop("cases", None)
        doc["cases_file"] = str(ECHO_CASES)
    else:
        doc["cases"] = cases
    doc["scorers"] = [{"name": "contains", "kind": "contains"}]
    project.write_text(tomli_w.dumps(doc), encoding="utf-8")

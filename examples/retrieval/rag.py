"""A retrieval pipeline as an arenatui solver: find passages, then ask an LLM (the mock server, over HTTP)."""

from __future__ import annotations

import os
import re

import httpx

import arenatui

CORPUS = [
    "Tolkien wrote most of The Lord of the Rings in Oxford, where he taught at Pembroke and Merton colleges.",
    "Ada Lovelace's notes described Charles Babbage's Analytical Engine, including an algorithm for it.",
    "Marie Curie named polonium after Poland, her homeland, in 1898.",
    "Turing's 1936 paper answered Hilbert's Entscheidungsproblem: no general decision procedure exists.",
    "In 1947 Grace Hopper's team found a moth trapped in a relay of the Harvard Mark II.",
]


def retrieve(question: str, k: int = 2) -> list[str]:
    """The k passages sharing the most words with the question (a stand-in for a vector store)."""
    words = set(re.findall(r"\w+", question.lower()))
    return sorted(CORPUS, key=lambda p: -len(words & set(re.findall(r"\w+", p.lower()))))[:k]


def base_url() -> str:
    return os.environ.get("ARENA_MOCK_URL", "http://127.0.0.1:8765/v1")


async def ask(model: str, system: str | None, question: str, max_tokens: int) -> arenatui.Answer:
    """One chat completion; the server's usage counts become the answer's tokens."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": question}]
    async with httpx.AsyncClient(timeout=10.0) as client:
        r = await client.post(f"{base_url()}/chat/completions",
                              json={"model": model, "messages": messages, "max_tokens": max_tokens})
    if r.status_code == 429:  # the engine backs off and retries, as it does for a hosted model
        raise arenatui.RateLimited(retry_after=float(r.headers.get("retry-after", 1)))
    if r.status_code >= 500:
        raise arenatui.Transient(f"HTTP {r.status_code}")
    r.raise_for_status()  # anything else: this call's solver_error, with the traceback in its detail
    body = r.json()
    usage = body.get("usage") or {}
    return arenatui.Answer(body["choices"][0]["message"]["content"], usage.get("prompt_tokens"),
                           usage.get("completion_tokens"))


def make_rag(ctx: arenatui.TrialContext) -> arenatui.Solver:
    """Called once per trial; the solver it returns answers that trial's attempts."""

    async def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
        question = str(req.input)
        passages = "\n".join(f"- {p}" for p in retrieve(question))
        return await ask("rag", f"Answer from these passages:\n{passages}", question, req.max_tokens)

    return solve


def make_plain(ctx: arenatui.TrialContext) -> arenatui.Solver:
    async def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
        return await ask("plain", req.system, str(req.input), req.max_tokens)

    return solve

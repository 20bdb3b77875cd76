"""What the HTTP providers share: the client, the call, SSE parsing, retry-after, error mapping, secret scrubbing.

`openai.py` and `anthropic.py` only say how to build a request body and how to read an answer;
everything about the wire (pool, deadline, status codes, headers, secrets) lives here once.

Every parser in this module raises only `ProviderError` subclasses on bad input, whatever the
bytes: a server's garbage is a transient failure of one attempt, never a crash of the sweep.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import orjson
import sniffio

from arenatui.config.schema import ModelConfig, RunSettings
from arenatui.kernel.errors import (
    AttemptTimedOut,
    IncompleteStream,
    ProviderError,
    ProviderSetupError,
    RateLimited,
    TerminalError,
    TransientError,
)
from arenatui.kernel.redact import redact_urls_in_text, scrub, url_credentials
from arenatui.kernel.text import one_line
from arenatui.providers.base import (
    ANSWER_CAP,
    MAX_ANSWER_CHARS,
    REASONING_CHARS,
    Completion,
    DeclaredLimits,
    Request,
    capped,
    cut_answer,
    estimate_tokens,
    usage_count,
)
from arenatui.providers.transports import Wire, WireResponse, open_wire, resolve

if TYPE_CHECKING:
    import httpx

MESSAGE_CHARS = 300
"""Longest provider message kept in an error (the rest of a body is noise, and may hold secrets)."""
ERROR_BODY_BYTES = 64 * 1024
"""Most bytes of an error body read: enough for any real error, bounded against a hostile server."""
SENSITIVE_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie",
                               "x-goog-api-key"})

# ---- secrets: the rules live in arenatui/kernel/redact.py (one module for every secret); `scrub` is used here -------


def read_header_env(model: ModelConfig) -> dict[str, str]:
    """Header values from the environment variables named in ``headers_env``; a setup error when one is unset."""
    out: dict[str, str] = {}
    for header, var in model.headers_env.items():
        value = os.environ.get(var, "").strip()
        if not value:
            raise ProviderSetupError(
                f"model {model.key!r} reads its {header} header from the environment variable {var}, which is not "
                f"set (or empty). Set it (export {var}=...) or remove it from headers_env.",
                setting=f"headers_env.{header}")
        out[header] = value
    return out


def url_secrets(url: str | None) -> set[str]:
    """Credentials in a URL as an error body might echo them: as written, unquoted, and as a Basic header."""
    if not url:
        return set()
    from base64 import b64encode
    from urllib.parse import unquote

    out: set[str] = set()
    for c in url_credentials(url):
        out.update((c, unquote(c)))
        if ":" in c:  # user:password, which clients send as Authorization: Basic base64(...)
            out.add(b64encode(unquote(c).encode()).decode())
    return out


def split_userinfo(url: str) -> tuple[str, str | None]:
    """`url` without its ``user:password@``, and the ``Basic ...`` header value that carries them instead."""
    from base64 import b64encode
    from urllib.parse import unquote, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    basic = "Basic " + b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    return urlunsplit(parts._replace(netloc=host)), basic


class _RedactUrlsInLogs(logging.Filter):
    """httpx logs every request's URL at INFO: credential query parameters must not reach a log that way."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact_urls_in_text(msg)
        if clean != msg:
            record.msg, record.args = clean, ()
        return True


logging.getLogger("httpx").addFilter(_RedactUrlsInLogs())


def read_api_key(model: ModelConfig) -> str | None:
    """The key from the model's named environment variable; a clear setup error when it is unset."""
    if model.api_key_env is None:
        return None
    key = os.environ.get(model.api_key_env, "").strip()
    if not key:
        raise ProviderSetupError(
            f"model {model.key!r} reads its API key from the environment variable {model.api_key_env}, which is "
            f"not set (or empty). Set it (export {model.api_key_env}=...) or remove api_key_env for a local "
            f"server that needs no key.", setting="api_key_env")
    return key


# ---- retry-after and status mapping ---------------------------------------------------------------


RETRY_HINT_HEADERS = ("retry-after-ms", "retry-after", "llm_provider-retry-after", "x-ratelimit-reset-requests",
                      "x-ratelimit-reset-tokens", "anthropic-ratelimit-requests-reset",
                      "anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-input-tokens-reset",
                      "anthropic-ratelimit-output-tokens-reset")
"""Headers a 429 may carry its delay in, by precedence: the standard ones, LiteLLM's proxy header (the common
gateway in front of local models, which sends no Retry-After), then the limit-reset headers of OpenAI (durations
such as ``1s``, ``6m0s``) and Anthropic (RFC 3339 times)."""

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(s: str) -> float | None:
    """Seconds in a Go-style duration (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``) or a plain number of seconds."""
    s = s.strip()
    plain = _non_negative(s)
    if plain is not None:
        return plain
    total, at = 0.0, 0
    for m in _DURATION.finditer(s):
        if m.start() != at:
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        at = m.end()
    return total if at == len(s) and at > 0 and math.isfinite(total) else None


def _until(when: str, now: float) -> float | None:
    """Seconds from `now` until an RFC 3339 time (``2026-05-01T12:00:30Z``), at least 0."""
    from datetime import datetime

    t = datetime.fromisoformat(when.strip())
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return max(0.0, t.timestamp() - now)


_OPENAI_RESETS = (("x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"),
                  ("x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"))
_ANTHROPIC_RESETS = tuple((f"anthropic-ratelimit-{k}-reset", f"anthropic-ratelimit-{k}-remaining")
                          for k in ("requests", "tokens", "input-tokens", "output-tokens"))


def _reset_hint(low: Mapping[str, str], names: tuple[tuple[str, str], ...],
                read: Callable[[str], float | None]) -> tuple[float, str] | None:
    """A limit-reset header as a delay: the limit that is used up (its ``remaining`` is 0) decides; with none known
    to be used up, the longest reset among those without a ``remaining`` header, else the shortest one."""
    found: list[tuple[float, str, str | None]] = []
    for reset, remaining in names:
        raw = low.get(reset)
        v = None if raw is None else read(raw)
        if v is not None:
            left = low.get(remaining)
            found.append((v, reset, None if left is None else left.strip()))
    if not found:
        return None
    spent = [(v, n) for v, n, left in found if left == "0"]
    if spent:
        return max(spent)
    unknown = [(v, n) for v, n, left in found if left is None]
    return max(unknown) if unknown else min((v, n) for v, n, _ in found)


def parse_retry_hint(headers: Mapping[str, str], now: float | None = None) -> tuple[float, str] | None:
    """Seconds to wait before retrying a 429 and the header that said so (RETRY_HINT_HEADERS, by precedence);
    None when the response carries no readable hint."""
    at = time.time() if now is None else now
    try:
        low = {str(k).lower(): str(v) for k, v in headers.items()}
    except (TypeError, ValueError, AttributeError):
        return None
    ms = low.get("retry-after-ms")
    if ms is not None and (v := _non_negative(ms)) is not None:
        return v / 1000.0, "retry-after-ms"
    ra = low.get("retry-after")
    if ra is not None:
        v = _non_negative(ra)
        if v is not None:
            return v, "retry-after"
        try:
            when = parsedate_to_datetime(ra.strip())
            if when.tzinfo is None:  # RFC 9110 dates are GMT
                when = when.replace(tzinfo=UTC)
            return max(0.0, when.timestamp() - at), "retry-after"
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    proxy = low.get("llm_provider-retry-after")
    if proxy is not None and (v := _non_negative(proxy)) is not None:
        return v, "llm_provider-retry-after"

    def rfc3339(raw: str) -> float | None:
        try:
            return _until(raw, at)
        except (ValueError, OverflowError):
            return None

    return _reset_hint(low, _OPENAI_RESETS, parse_duration) or _reset_hint(low, _ANTHROPIC_RESETS, rfc3339)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait per any retry hint a 429 carries (`parse_retry_hint`); None if absent or unreadable."""
    hint = parse_retry_hint(headers, now)
    return None if hint is None else hint[0]


_OPENAI_DECLARED = ("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-limit-tokens")
_ANTHROPIC_DECLARED = ("anthropic-ratelimit-requests-limit", "anthropic-ratelimit-tokens-limit",
                       "anthropic-ratelimit-input-tokens-limit")


def declared_limits(headers: Mapping[str, str], now: float | None = None) -> DeclaredLimits | None:
    """The rate limits a response declares (OpenAI-compatible ``x-ratelimit-*``, Anthropic ``anthropic-ratelimit-*``),
    or None when it declares none. Read on every response, so a response without them costs six lookups and no
    more; an unreadable value is left out, never an error. Anthropic's tokens are its ``tokens-*`` headers (the
    most restrictive limit in effect), else its ``input-tokens-*``."""
    get = headers.get
    try:
        if get("x-ratelimit-limit-requests") or get("x-ratelimit-remaining-requests") or \
                get("x-ratelimit-limit-tokens"):
            return DeclaredLimits(
                _whole(get("x-ratelimit-limit-requests")), _whole(get("x-ratelimit-remaining-requests")),
                _seconds(get("x-ratelimit-reset-requests"), parse_duration),
                _whole(get("x-ratelimit-limit-tokens")), _whole(get("x-ratelimit-remaining-tokens")),
                _seconds(get("x-ratelimit-reset-tokens"), parse_duration))
        if get("anthropic-ratelimit-requests-limit") or get("anthropic-ratelimit-tokens-limit") or \
                get("anthropic-ratelimit-input-tokens-limit"):
            at = time.time() if now is None else now

            def rfc3339(raw: str) -> float | None:
                try:
                    return _until(raw, at)
                except (ValueError, OverflowError):
                    return None

            tok = "tokens" if get("anthropic-ratelimit-tokens-limit") else "input-tokens"
            return DeclaredLimits(
                _whole(get("anthropic-ratelimit-requests-limit")),
                _whole(get("anthropic-ratelimit-requests-remaining")),
                _seconds(get("anthropic-ratelimit-requests-reset"), rfc3339),
                _whole(get(f"anthropic-ratelimit-{tok}-limit")), _whole(get(f"anthropic-ratelimit-{tok}-remaining")),
                _seconds(get(f"anthropic-ratelimit-{tok}-reset"), rfc3339))
    except (TypeError, AttributeError):  # a header mapping that is not one (a fake transport's)
        return None
    return None


def _whole(raw: str | None) -> int | None:
    if raw is None:
        return None
    v = _non_negative(raw)
    return int(v) if v is not None and v < 1e15 else None


def _seconds(raw: str | None, read: Callable[[str], float | None]) -> float | None:
    return None if raw is None else read(raw)


def _non_negative(s: str) -> float | None:
    try:
        v = float(s.strip())
    except ValueError:
        return None
    return v if math.isfinite(v) and v >= 0 else None


def provider_message(body: bytes) -> str:
    """The human part of an error body: ``error.message`` (OpenAI and Anthropic), ``message``, or the text."""
    text = body[:ERROR_BODY_BYTES].decode("utf-8", errors="replace")
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            for k in ("message", "detail", "type"):
                if isinstance(err.get(k), str):
                    return str(err[k])
        elif isinstance(err, str):
            return err
        if isinstance(obj.get("message"), str):
            return str(obj["message"])
    return text


def error_for_status(status: int, headers: Mapping[str, str], body: bytes, *, where: str,
                     secrets: Iterable[str] = ()) -> ProviderError:
    """The engine's error class for an HTTP status: 429 rate-limited; 408, 409, 5xx transient; other 4xx terminal.

    ``x-should-retry: true/false``, when a server sends it, overrides the status.
    """
    msg = one_line(scrub(provider_message(body), secrets), MESSAGE_CHARS).strip()
    text = f"HTTP {status} from {where}" + (f": {msg}" if msg else "")
    low = {str(k).lower(): str(v).strip().lower() for k, v in headers.items()}
    should_retry = low.get("x-should-retry")
    err: ProviderError
    if should_retry == "false":
        err = TerminalError(text + " (server said x-should-retry: false)")
    elif status == 429:
        hint = parse_retry_hint(headers)
        err = RateLimited(text, retry_after=None if hint is None else hint[0],
                          retry_after_source=None if hint is None else hint[1])
        err.limits = declared_limits(headers)
    elif should_retry == "true" or status in (408, 409) or status >= 500:
        err = TransientError(text)
    else:
        err = TerminalError(text + _setting_hint(status, msg))
    err.http_status = status  # stored with the failed attempt
    return err


_SETTING_HINTS = {
    "max_completion_tokens": 'set token_limit_param = "max_tokens" on this model',
    "max_tokens": 'set token_limit_param = "max_completion_tokens" on this model',
    "temperature": 'set temperature = "omit" on this model',
    "reasoning_effort": "remove reasoning_effort from this model",
    "thinking": "remove thinking from this model",
}
_PARAMETER = re.compile(r"max_completion_tokens|max_tokens|temperature|reasoning_effort|thinking")
_UNSUPPORTED = re.compile(r"unsupported|not supported|does not support|unrecogni[sz]ed|unknown|not allowed|"
                          r"extra inputs|not permitted|only the default|instead")


def _setting_hint(status: int, msg: str) -> str:
    """For a 400/422 that names a request parameter this model refuses (the first one it names): which model
    setting to change, in one line."""
    if status not in (400, 422):
        return ""
    low = msg.lower()
    if not _UNSUPPORTED.search(low):
        return ""
    m = _PARAMETER.search(low)
    return f" ({_SETTING_HINTS[m.group(0)]})" if m else ""


# ---- server-sent events ----------------------------------------------------------------------------


class SSEEvent(NamedTuple):
    """One server-sent event (a NamedTuple: built for every event of every stream, it must cost little)."""

    event: str
    data: str


class SSEDecoder:
    """Incremental server-sent-events parser (WHATWG rules): feed bytes, get whole events.

    Lines end in CRLF, LF or CR; ``data`` lines join with newlines; comments are skipped; invalid
    UTF-8 becomes U+FFFD rather than an exception.
    """

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf + chunk if self._buf else chunk
        out: list[SSEEvent] = []
        if b"\r" not in buf:
            # The common case, LF line ends: split in C and decode once (a multi-byte character never
            # contains an LF byte, so decoding whole lines together gives what decoding each would).
            head, sep, tail = buf.rpartition(b"\n")
            self._buf = tail
            if sep:
                line = self._line
                for text in head.decode("utf-8", errors="replace").split("\n"):
                    line(text, out)
            return out
        start = 0
        n = len(buf)
        while start < n:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == n:  # a CR at the end may be the first half of CRLF: wait for more
                    break
                end, nxt = cr, cr + 2 if buf[cr + 1 : cr + 2] == b"\n" else cr + 1
            else:
                end, nxt = lf, lf + 1
            self._line(buf[start:end].decode("utf-8", errors="replace"), out)
            start = nxt
        self._buf = buf[start:]
        return out

    def feed_plain(self, chunk: bytes) -> list[str] | None:
        """The data of the events in `chunk` when it ends a run of whole, plain events (LF line ends, each event one
        ``data: `` line, none pending before it), else None and nothing consumed (then `feed` it): what an
        OpenAI-compatible stream's body after its first token is, read here with a few C calls instead of a
        Python call per line and an `SSEEvent` per event."""
        if self._data or self._event:
            return None
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf or not buf.endswith(b"\n\n"):
            return None
        text = buf.decode("utf-8", errors="replace")
        # Whole `data: ` lines each followed by a blank line and nothing else: the text opens with one, and its line
        # ends are exactly the two after each event (k events: 2k of them, k - 1 of them right before the next
        # `data: `). Two counts in C, a third of a regular expression's cost.
        events = text.count("\n\ndata: ") + 1
        if not text.startswith("data: ") or text.count("\n") != 2 * events:
            return None
        self._buf = b""
        return [event[6:] for event in text[:-2].split("\n\n")]

    def close(self) -> list[SSEEvent]:
        """Whatever a stream that ended without a final blank line left pending (lenient, like browsers are not)."""
        out: list[SSEEvent] = []
        if self._buf:
            self._line(self._buf.decode("utf-8", errors="replace"), out)
            self._buf = b""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if line.startswith("data:"):  # most lines: skip the general field parsing below
            self._data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            return
        if not line:
            if self._data:
                out.append(SSEEvent(self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


def json_object(data: str | bytes, what: str) -> dict[str, Any]:
    """Parse one JSON object from a server, as a transient error when it is not one.

    orjson first: a response body or a streamed event is parsed 2-3x faster than by the stdlib (callgrind: 15k
    instructions against 35k for a chat completion, 10k against 21k per streamed event), and parsing is most of the
    client's own CPU per call. What orjson refuses and the stdlib reads (NaN, a lone surrogate escape) goes to
    `json.loads`, so what is accepted, and what it parses to, is the stdlib's; but for an integer past 64 bits, a float
    here (no count a server sends can sanely be one: `as_int` reads neither as a count)."""
    try:
        obj = _orjson_loads(data)
    except _OrjsonError:
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):
            raise TransientError(f"malformed {what}: not valid JSON ({len(data)} bytes)") from None
    if type(obj) is not dict:
        raise TransientError(f"malformed {what}: expected a JSON object, got {type(obj).__name__}")
    return obj


_orjson_loads = orjson.loads
_OrjsonError = orjson.JSONDecodeError

_STDLIB_BODY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""The request body's encoder where orjson would write something else (`orjson_writes_as_stdlib`): made once (json.dumps
with any option builds an encoder per call)."""


def orjson_writes_as_stdlib(value: object) -> bool:
    """Whether orjson writes `value` as the stdlib's json does (UTF-8, compact), or refuses it: false for a float that
    is not finite (the stdlib refuses it with allow_nan=False, orjson would write null), an integer past 64 bits, a
    key that is not a string, and any type but JSON's own (orjson writes a TOML datetime as a string)."""
    if value is None or type(value) in (str, bool):
        return True
    if type(value) is int:
        return -(1 << 63) <= value < (1 << 64)
    if type(value) is float:
        return math.isfinite(value)
    if type(value) in (list, tuple):
        return all(orjson_writes_as_stdlib(v) for v in value)  # type: ignore[attr-defined]
    if type(value) is dict:
        return all(type(k) is str and orjson_writes_as_stdlib(v) for k, v in value.items())
    return False


def encode_body(body: dict[str, Any], fast: bool) -> bytes:
    """A request body as compact UTF-8 JSON: orjson when `fast` (what the provider adds to every body passed
    `orjson_writes_as_stdlib`; the rest is strings and numbers it checked), else the stdlib's encoder, which refuses
    NaN with a ValueError."""
    if fast:
        try:
            return _orjson_dumps(body)
        except TypeError:  # something else in it (a mapping that is not a dict): the stdlib says what
            pass
    return _STDLIB_BODY.encode(body).encode()


_orjson_dumps = orjson.dumps


def as_int(v: object) -> int | None:
    """A token count from a server, or None when it is missing or not a sane whole number."""
    return usage_count(v)


TEMPLATE_TOKENS_PER_MESSAGE = 4
"""The chat template's tokens around each message, where the server's were not measured: a turn's start and end
markers cost 3 on OpenAI's own models (its documented count), 5 in Gemma's and Llama 3's templates."""
TEMPLATE_TOKENS_PRIMING = 3
"""The tokens that open the answer's turn (``<start_of_turn>model``, OpenAI's documented 3)."""


def template_tokens(messages: Iterable[Mapping[str, str]], measured: int | None = None) -> int:
    """The chat template's share of a prompt's input tokens: `measured` (for a one-message prompt: the server's
    count of a prompt less its tokenizer's count of the messages' text, `OpenAIProvider.measure_template`) plus a
    fixed estimate for each further message; with nothing measured, a fixed estimate per message and for the
    answer's turn."""
    n = sum(1 for _ in messages)
    if measured is not None:
        return measured + TEMPLATE_TOKENS_PER_MESSAGE * max(0, n - 1)
    return TEMPLATE_TOKENS_PER_MESSAGE * n + TEMPLATE_TOKENS_PRIMING


def usage_or_estimate(text: str, messages: Iterable[Mapping[str, str]], input_tokens: int | None,
                      output_tokens: int | None, template: int | None = None) -> tuple[int, int, bool]:
    """Token counts as the server reported them, or our estimate (flagged) when it reported none.

    A zero count for a non-empty prompt or answer cannot be true (some mock servers send it): estimated too. An
    estimated input counts the chat template around the messages too (`template_tokens`; `template`, the overhead
    measured on this model's server, if it was): without it llama.cpp's own count was 36% above the estimate.
    """
    if output_tokens == 0 and text:
        output_tokens = None
    if input_tokens == 0:
        input_tokens = None
    estimated = input_tokens is None or output_tokens is None
    if input_tokens is None:
        messages = tuple(messages)
        input_tokens = max(1, estimate_tokens("\n".join(str(m.get("content", "")) for m in messages)) +
                           template_tokens(messages, template))
    if output_tokens is None:
        output_tokens = estimate_tokens(text) if text else 0
    return input_tokens, output_tokens, estimated


def with_usage(err: ProviderError, input_tokens: int, output_tokens: int) -> ProviderError:
    """Attach the usage an attempt consumed before failing (the engine counts it in the cost)."""
    err.input_tokens = input_tokens
    err.output_tokens = output_tokens
    return err


def with_reasoning(text: str, reasoning: str | None, messages: Iterable[Mapping[str, str]], input_tokens: int | None,
                   output_tokens: int | None, reasoning_tokens: int | None, finish_reason: str,
                   template: int | None = None) -> Completion:
    """An answer with its reasoning apart: the reasoning's tokens as reported, else estimated (marked) from its text;
    an output count the server did not report is estimated from answer and reasoning together (both are output)."""
    est_r = False
    if not reasoning_tokens and reasoning:  # none reported, or 0 for a reasoning that is there (cannot be true)
        answer = estimate_tokens(text) if text else 0
        if output_tokens and output_tokens > answer:  # the output counted, less the answer's (exact with no answer)
            reasoning_tokens, est_r = output_tokens - answer, bool(text)
        else:
            reasoning_tokens, est_r = estimate_tokens(reasoning), True
    i, o, est = usage_or_estimate(text, messages, input_tokens, output_tokens, template)
    if output_tokens is None or (output_tokens == 0 and text):
        o = (estimate_tokens(text) if text else 0) + (reasoning_tokens or 0)
    return Completion(text, i, o, finish_reason, tokens_estimated=est,
                      reasoning=None if reasoning is None else reasoning[:REASONING_CHARS],
                      reasoning_tokens=reasoning_tokens, reasoning_estimated=est_r)


def timed(comp: Completion, latency_s: float, connect_s: float, limits: DeclaredLimits | None) -> Completion:
    """`comp` with its wire times and the limits its response declared: the same as ``comp._replace(latency_s=...,
    connect_s=..., limits=...)`` (a test checks it) at half the cost (callgrind: 5.9k instructions against 11.5k),
    once per HTTP call."""
    return _make_completion((*comp[:6], latency_s, connect_s, *comp[8:13], limits))


_make_completion = Completion._make


# ---- the provider base --------------------------------------------------------------------------


class StreamReader:
    """Folds one streamed answer, event by event. Subclasses read their wire format in `on_event`."""

    template: int | None = None
    """The chat template's tokens measured on this model's server (`usage_or_estimate`), if they were."""

    def __init__(self, request: Request, sent: float, where: str, secrets: tuple[str, ...] = ()) -> None:
        self.request = request
        self.sent = sent  # when the request went onto the wire: time to first token counts from here
        self.where = where
        self.chunk_what = f"stream chunk from {where}"
        """How an error names a chunk of this stream (formatted once a stream, not once an event)."""
        self.secrets = secrets
        self.parts: list[str] = []
        self.thought: list[str] | None = None
        """The reasoning's pieces, once one came."""
        self.ttft_s: float | None = None
        """The first token of any kind: reasoning or answer."""
        self.answer_s: float | None = None
        """The first token of the answer."""
        self.finish_reason: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.reasoning_tokens: int | None = None
        self.done = False
        self.max_chars = MAX_ANSWER_CHARS
        """The most characters kept ([run] max_answer_chars): the rest is counted, not kept."""
        self.received_chars = 0

    def add_text(self, text: str) -> None:
        if text:
            if self.answer_s is None:
                self.answer_s = time.monotonic() - self.sent
                if self.ttft_s is None:
                    self.ttft_s = self.answer_s
            n = self.received_chars = self.received_chars + len(text)
            if n <= self.max_chars:  # one addition and one comparison a token below the cap
                self.parts.append(text)
            else:
                room = self.max_chars - (n - len(text))
                if room > 0:  # the piece that crosses the cap: what fits of it
                    self.parts.append(text[:room])

    def add_reasoning(self, text: str) -> None:
        """A piece of reasoning: timed as a first token, kept apart from the answer."""
        if self.ttft_s is None:
            self.ttft_s = time.monotonic() - self.sent
        if self.thought is None:
            self.thought = []
        if text:
            self.thought.append(text)

    def on_event(self, ev: SSEEvent) -> None:
        raise NotImplementedError

    def on_data(self, data: str) -> None:
        """An event of the default type (``message``) carrying `data`: what `SSEDecoder.feed_plain` reads."""
        self.on_event(SSEEvent("message", data))

    def on_batch(self, datas: list[str]) -> None:
        """The rest of a stream's events at once (`SSEDecoder.feed_plain`'s), in order."""
        for data in datas:
            self.on_data(data)

    def partial_usage(self) -> tuple[int, int]:
        text = "".join(self.parts) + ("".join(self.thought) if self.thought else "")
        i, o, _ = usage_or_estimate(text, self.request.messages, self.input_tokens, self.output_tokens,
                                    self.template)
        return i, o

    def fail(self, err: ProviderError) -> ProviderError:
        return with_usage(err, *self.partial_usage())

    def error_event(self, error: object) -> ProviderError:
        """An error the server sent inside a 200 stream, classified by its type."""
        kind = ""
        msg = ""
        if isinstance(error, dict):
            kind = str(error.get("type") or error.get("code") or "")
            msg = str(error.get("message") or "")
        elif isinstance(error, str):
            msg = error
        text = f"error in the stream from {self.where}: " + one_line(scrub(f"{kind} {msg}".strip(), self.secrets),
                                                                     MESSAGE_CHARS)
        if "rate_limit" in kind or kind == "429":
            return self.fail(RateLimited(text))
        if kind in ("invalid_request_error", "authentication_error", "permission_error", "not_found_error"):
            return self.fail(TerminalError(text))
        return self.fail(TransientError(text))

    def finish(self) -> Completion:
        if not self.done or self.finish_reason is None:
            # Whatever it carried is not an answer: llama.cpp's server, interrupted by another request, ends a
            # stream with [DONE] and no finish reason; a proxy's cut ends it with neither.
            why = "it ended without its end marker (no finish reason, no final event)" if not self.done else \
                "it ended without a finish reason on any choice (the server broke it off)"
            raise self.incomplete(f"incomplete stream from {self.where}: {why}")
        text = "".join(self.parts)
        if self.received_chars > self.max_chars:  # cut: an estimate counts what was generated, not what was kept
            i, o, est = usage_or_estimate(text, self.request.messages, self.input_tokens, self.output_tokens,
                                          self.template)
            if self.output_tokens is None:
                o = (self.received_chars + 3) // 4  # estimate_tokens' rule, over every character received
            return Completion(cut_answer(text, self.received_chars, self.max_chars), i, o, ANSWER_CAP, self.ttft_s,
                              est, answer_ttft_s=self.answer_s)
        thought = self.thought
        if thought is None and not self.reasoning_tokens:  # no reasoning (LiteLLM reports 0 for every model)
            i, o, est = usage_or_estimate(text, self.request.messages, self.input_tokens, self.output_tokens,
                                          self.template)
            return Completion(text, i, o, self.finish_reason, self.ttft_s, est, answer_ttft_s=self.answer_s)
        reasoning = "".join(thought) if thought is not None else None
        return with_reasoning(text, reasoning, self.request.messages, self.input_tokens, self.output_tokens,
                              self.reasoning_tokens, self.finish_reason, self.template)._replace(ttft_s=self.ttft_s,
                                                                                   answer_ttft_s=self.answer_s)

    def incomplete(self, message: str) -> ProviderError:
        """An IncompleteStream with what the stream carried kept as its detail (the call's, when it is the last)."""
        err = self.fail(IncompleteStream(message))
        text = "".join(self.parts)
        err.detail = (f"partial answer, {len(text)} characters: {text[:MESSAGE_CHARS]}" if text
                      else "no answer text arrived")
        return err


class HttpProvider:
    """One model over one `Wire` (httpx or aiohttp, `transports.py`): no client retries, one deadline per call.

    This is the one place that turns what happened on the wire into the engine's outcomes: the
    deadline, timeouts, connection failures, status codes, retry-after and scrubbed messages, the
    same for every transport.
    """

    enforces_timeout = True
    """Every attempt ends at `request.timeout_s` (TimeoutError), trickling servers included."""

    def __init__(self, model: ModelConfig, run: RunSettings, concurrency_hint: int = 64, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        # concurrency_hint no longer sizes anything: pools grow with the calls in flight (transports.py).
        self.model = model
        self.where = f"{model.key} ({model.provider})"
        key = read_api_key(model)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        headers.update(self.auth_headers(key))
        headers.update(model.headers)
        from_env = read_header_env(model)
        headers.update(from_env)
        self._headers = headers
        # Every value the project gave a header is treated as a credential (short ones would only garble text).
        given = {v for v in (*model.headers.values(), *from_env.values()) if len(v) >= 6}
        self._secrets = tuple(sorted({v for k, v in headers.items() if k.lower() in SENSITIVE_HEADERS and v}
                                     | given | url_secrets(model.base_url) | ({key} if key else set()),
                                     key=len, reverse=True))
        if model.base_url is None:
            raise ProviderSetupError(f"model {model.key!r}: base_url is required for provider {model.provider!r}")
        # user:password@ in base_url goes out as a Basic header, never in the URL: HTTP clients log request URLs.
        base_url, basic = split_userinfo(model.base_url)
        if basic is not None and not any(k.lower() == "authorization" for k in headers):
            headers["authorization"] = basic
        # A query in base_url (?api-version=..., a gateway's ?key=...) belongs after the endpoint's path.
        base_url, _, query = base_url.partition("?")
        self.url = self.endpoint(base_url.rstrip("/")) + (f"?{query}" if query else "")
        self._timeout_s = run.timeout_s
        self._max_chars = run.max_answer_chars or MAX_ANSWER_CHARS
        self._fast_body = orjson_writes_as_stdlib(model.extra_body)
        """Bodies are written by orjson (`encode_body`): what the model adds to each is plain JSON."""
        self._fake = transport
        self._wire: Wire | None = None
        self._timeouts: tuple[type[BaseException], ...] = (TimeoutError,)
        self.declared: DeclaredLimits | None = None
        """The rate limits the provider declared in its latest response that declared any."""

    @property
    def wire(self) -> Wire:
        """The transport, chosen on first use (``auto`` depends on the running event loop)."""
        if self._wire is None:
            name = resolve(self.model.transport)
            if name == "aiohttp" and self._fake is None and sniffio.current_async_library() != "asyncio":
                raise TerminalError(f"model {self.model.key!r}: transport = \"aiohttp\" runs only on asyncio; "
                                    f"use \"auto\" or \"httpx\" here")
            self._wire = open_wire(name, self._headers, self._timeout_s, self._fake,
                                   tls=self.url.lower().startswith("https:"))
            self._timeouts = (TimeoutError, *self._wire.timeout_errors)  # ours (the deadline), and the library's
        return self._wire

    def prepare(self) -> Awaitable[None] | None:
        """Choose the transport and open its session now (in the running loop, before the first call), so
        neither the import nor the TLS context lands inside the first calls' latencies. What a format's provider
        also has to ask its server before the calls comes back as an awaitable (`OpenAIProvider`)."""
        self.wire.warm()
        return None

    # ---- per wire format ----

    def auth_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def endpoint(self, base_url: str) -> str:
        raise NotImplementedError

    def body(self, request: Request, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def parse_json(self, raw: bytes, request: Request) -> Completion:
        raise NotImplementedError

    def stream_reader(self, request: Request, sent: float) -> StreamReader:
        raise NotImplementedError

    # ---- the call ----

    async def complete(self, request: Request) -> Completion:
        stream = self.model.stream
        content = encode_body(self.body(request, stream), self._fast_body and math.isfinite(request.temperature))
        wire = self._wire or self.wire
        reading: list[StreamReader] = []  # the stream's reader once the answer's headers came: its first token
        timeouts = self._timeouts
        try:
            # anyio.fail_after without its generator: the same scope, the same TimeoutError at the deadline
            deadline = anyio.CancelScope(deadline=anyio.current_time() + request.timeout_s)
            with deadline:
                t0 = time.monotonic()
                async with wire.post(self.url, content) as resp:
                    sent = resp.sent_at or t0
                    if not 200 <= resp.status < 300:
                        raw = await _read_capped(resp.chunks(), ERROR_BODY_BYTES)
                        err = error_for_status(resp.status, resp.headers, raw, where=self.where,
                                               secrets=self._secrets)
                        err.latency_s, err.connect_s = time.monotonic() - sent, sent - t0  # a 429 is timed too
                        raise err
                    if "text/event-stream" in resp.headers.get("content-type", ""):
                        comp, end = await self._read_stream(wire, resp, request, sent, reading)
                    else:
                        raw = await resp.read()
                        end = time.monotonic()
                        comp = capped(self.parse_json(raw, request), self._max_chars)
                    limits = declared_limits(resp.headers)
            if deadline.cancelled_caught:
                raise TimeoutError
            # The answer is timed. Let every other call whose bytes arrived in this same turn of the event
            # loop take its own time too, before this one goes on to scoring, events and its next request:
            # otherwise the k-th answer of a burst is stamped after k-1 calls' worth of that work. Not shielded (a
            # shield is a cancel scope: 20k instructions a call, callgrind): a call cancelled in this one turn is
            # one the sweep was dropping anyway (only stopping a sweep cancels a call in flight).
            await anyio.lowlevel.checkpoint()
            if limits is not None:
                self.declared = limits
            return timed(comp, end - sent, sent - t0, limits)
        except RateLimited as limited:
            if limited.limits is not None:
                self.declared = limited.limits
            raise
        except ProviderError:
            raise
        except timeouts:
            e = AttemptTimedOut(f"no complete answer from {self.where} within {request.timeout_s:g}s",
                                None if not stream else bool(reading) and reading[0].ttft_s is not None)
            if e.first_token:
                e.first_token_s = reading[0].ttft_s
            raise e from None
        except wire.errors as e:
            # Connection refused or reset, protocol errors, a body cut short: worth another attempt.
            raise TransientError(f"{type(e).__name__} talking to {self.where}: {self._detail(e)}") from None

    def _detail(self, e: BaseException) -> str:
        text = str(e) or type(e).__name__
        if self.url.startswith("http://"):
            # aiohttp names its TLS setting even for a plain-http URL ("Cannot connect to host 127.0.0.1:1
            # ssl:default"), which reads as a TLS problem where there is none
            text = text.replace(" ssl:default", "")
        return one_line(scrub(text, self._secrets), MESSAGE_CHARS)

    async def _read_stream(self, wire: Wire, resp: WireResponse, request: Request, sent: float,
                           reading: list[StreamReader]) -> tuple[Completion, float]:
        """The folded answer, and when its last event arrived.

        Event by event only until the first answer token (time to first token, and for a reasoning model the
        first answer token after its reasoning, are stamped as they arrive: a reasoning phase is read event by
        event so that its end is timed); then the rest of the body in one read, decoded at the end: no per-token
        SSE work in Python, whose CPU under load is queueing inside every latency we record. (aiohttp's read
        still wakes once per network chunk.)
        """
        reader = self.stream_reader(request, sent)
        reader.max_chars = self._max_chars
        reading.append(reader)  # so a timeout can tell whether the first token had come
        decoder = SSEDecoder()
        end: float | None = None
        left = b""  # what the chunk that brought the first answer token holds after it, not decoded yet
        try:
            async for chunk in resp.chunks():
                # Event by event (a chunk may hold the whole answer: a fast server's): stop after the one that
                # brought the first answer token, and fold the rest the cheap way below.
                while chunk:
                    cut = chunk.find(b"\n\n") + 2
                    piece, chunk = (chunk[:cut], chunk[cut:]) if cut > 1 else (chunk, b"")
                    for ev in decoder.feed(piece):
                        reader.on_event(ev)
                    if reader.done or reader.answer_s is not None:
                        break
                if reader.done:
                    end = time.monotonic()
                    left = chunk
                    break
                if reader.answer_s is not None:  # event by event through the reasoning: its end is timed too
                    left = chunk
                    break
            if end is None:
                rest = left + await resp.rest()
                end = time.monotonic()
            else:
                # whatever follows the final event (usage after the finish reason), read so the connection can be
                # reused
                rest = left + await resp.rest()
            plain = decoder.feed_plain(rest)
            if plain is not None:
                reader.on_batch(plain)
            else:
                for ev in decoder.feed(rest):
                    reader.on_event(ev)
        except wire.timeout_errors:
            raise
        except wire.errors as e:
            raise reader.fail(TransientError(
                f"stream from {self.where} broke off ({type(e).__name__}: {self._detail(e)})")) from None
        for ev in decoder.close():
            reader.on_event(ev)
        return reader.finish(), end

    async def aclose(self) -> None:
        wire, self._wire = self._wire, None
        if wire is not None:
            await wire.aclose()


async def _read_capped(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    buf = bytearray()
    async for c in chunks:
        buf += c
        if len(buf) >= limit:
            break
    return bytes(buf[:limit])

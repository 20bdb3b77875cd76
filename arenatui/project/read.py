"""Read a project from TOML (and its case files) into validated dataclasses, with errors for people."""

from __future__ import annotations

import csv
import dataclasses
import difflib
import errno
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from arenatui.config.schema import (
    JUDGE_LANE_PREFIX,
    MIN_THINKING_BUDGET,
    MOCK_FAULTS,
    OUTPUT_REF,
    REASONING_EFFORTS,
    REPAIRABLE,
    RETRY_AFTER_FORMS,
    SOLVER_CONCURRENCY,
    TOKEN_LIMIT_PARAMS,
    TRANSPORTS,
    VARIANT_SEP,
    BakeoffSettings,
    Case,
    Defaults,
    MockFaults,
    ModelConfig,
    Project,
    PromptVariant,
    Repair,
    Requirements,
    RunSettings,
    ScorerConfig,
    SimSettings,
    Terms,
)
from arenatui.kernel.errors import ConfigError
from arenatui.kernel.limits import (
    MAX_ANSWER_CHARS_LIMIT,
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_NESTING,
    MAX_RPM,
    MAX_SOLVER_PROCESSES,
    MAX_TRIALS,
)
from arenatui.kernel.redact import REDACTED, redact_url
from arenatui.providers.registry import provider_names, provider_spec
from arenatui.scoring.registry import JudgeSettings, scorer_kind, scorer_kinds

T = TypeVar("T")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,79}$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")


def resolve_project_path(path: str | Path) -> Path:
    """``--project`` takes a TOML file or a directory holding ``arena.toml``."""
    p = Path(path)
    if p.is_dir():
        p = p / "arena.toml"
    if not p.exists():
        raise ConfigError(str(p), None, symlink_loop(p) or "no such file; pass a project TOML file or a directory "
                                                           "holding arena.toml")
    return p


def symlink_loop(p: Path) -> str | None:
    """What to say of a path that does not resolve because its symbolic links loop (`exists()` is False for it
    too, and 'no such file' sent people looking for a file that is there); None when it is simply missing."""
    try:
        p.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "is a loop of symbolic links (a link that leads back to itself); point it at the file itself"
    return None


def load_project(path: str | Path) -> Project:
    p = resolve_project_path(path)
    try:
        text = p.read_text(encoding="utf-8")
        if text.startswith("\ufeff"):  # tomllib says "Invalid statement (line 1, column 1)" of it
            raise ConfigError(str(p), None, "starts with a UTF-8 byte-order mark (BOM), which TOML does not allow; "
                                            "save it as UTF-8 without a BOM (in most editors 'UTF-8', not 'UTF-8 with "
                                            "BOM')")
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(str(p), None, f"is not valid TOML ({e})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(str(p), None, f"cannot be read ({e})") from None
    except RecursionError:  # tomllib recurses per level of arrays and inline tables
        raise ConfigError(str(p), None, _TOO_DEEP) from None
    return project_from_dict(raw, p)


_TOO_DEEP = f"is nested too deeply to read: arrays and tables may nest at most {MAX_NESTING} levels"


def check_values(file: Path, where: str, data: Any) -> None:
    """Reject what no later layer can store, send or show (see `first_bad_value`), naming file and key."""
    bad = first_bad_value(data, where)
    if bad is not None:
        raise ConfigError(str(file), bad[0] or None, bad[1])


def first_bad_value(data: Any, where: str = "") -> tuple[str, str] | None:
    """(key path, what is wrong) for the first value in `data` that no later layer can store, send or show:
    a lone surrogate in any string or key (SQLite and JSON encoders refuse it at the end of a run, losing its
    rows), nan/inf in any number, nesting deeper than MAX_NESTING (json and the store recurse per level).

    Iterative, so that hostile data cannot make the check itself recurse; `where` prefixes key paths, which
    are only built for containers and for the value reported (benchmarks/case_load.py measures the cost).
    """
    bad = _bad_leaf(data)
    if bad is not None:
        return where, bad
    stack: list[tuple[str, Any, int]] = [(where, data, 0)]
    while stack:
        path, v, depth = stack.pop()
        if depth >= MAX_NESTING:
            return path, _TOO_DEEP
        if isinstance(v, Mapping):
            pairs: Any = v.items()
            mapping = True
        elif isinstance(v, (list, tuple)):
            pairs = enumerate(v)
            mapping = False
        else:
            continue
        nested = []
        for k, item in pairs:
            bad = (_bad_leaf(k) if mapping and isinstance(k, str) else None) or _bad_leaf(item)
            if bad is not None or isinstance(item, (Mapping, list, tuple)):
                child = (f"{path}.{k}" if path else str(k)) if mapping else f"{path}[{k}]"
                if bad is not None:
                    return child, bad
                nested.append((child, item, depth + 1))
        stack.extend(reversed(nested))  # the first bad value in reading order is the one reported
    return None


def _bad_leaf(v: Any) -> str | None:
    if isinstance(v, str):
        if v.isascii():
            return None
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as e:  # only a surrogate cannot be encoded
            return (f"holds a lone surrogate (\\u{ord(v[e.start]):04x} at character {e.start + 1}), which is not a "
                    "character: fix the text or its \\u escapes (a pair such as \\ud83d\\ude00 is fine)")
    elif isinstance(v, float) and not math.isfinite(v):
        return f"expected a finite number, got {v}"
    return None


class _Table:
    """Typed reads from one TOML table; remembers which keys were read so leftovers are errors."""

    def __init__(self, file: Path, path: str, data: Any) -> None:
        self.file = file
        self.path = path
        if not isinstance(data, Mapping):
            raise ConfigError(str(file), path or "(top level)", f"expected a table, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str | None, expected: str) -> ConfigError:
        return ConfigError(str(self.file), self.key(name) if name else (self.path or None), expected)

    def get(self, name: str, typ: type[T] | tuple[type, ...], default: T, what: str) -> T:
        self.seen.add(name)
        if name not in self.data:
            return default
        value = self.data[name]
        if isinstance(value, bool) and typ is not bool and (typ is int or typ is float or typ == (int, float)):
            raise self.error(name, f"expected {what}, got a boolean")
        if typ is float and isinstance(value, int):
            value = float(value)
        if not isinstance(value, typ):
            raise self.error(name, f"expected {what}, got {_kind(value)} {value!r}"[:300])
        return value  # type: ignore[return-value]

    def string(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        if required and name not in self.data:
            raise self.error(name, "is required (a string)")
        return self.get(name, str, default, "a string")

    def number(self, name: str, default: float | None, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False) -> float | None:
        v = self.get(name, float, default, "a number")
        if v is None or name not in self.data:
            return v
        if not math.isfinite(v):  # nan passes every comparison below
            raise self.error(name, f"expected a finite number, got {v}")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise self.error(name, f"expected a number {'>' if lo_open else '>='} {lo:g}, got {v:g}")
        if hi is not None and v > hi:
            raise self.error(name, f"expected a number <= {hi:g}, got {v:g}")
        return v

    def integer(self, name: str, default: int | None, *, lo: int | None = None, hi: int | None = None) -> int | None:
        v = self.get(name, int, default, "a whole number")
        if v is not None and lo is not None and name in self.data and v < lo:
            raise self.error(name, f"expected a whole number >= {lo}, got {v}")
        if v is not None and hi is not None and name in self.data and v > hi:
            raise self.error(name, f"expected a whole number <= {hi}, got {v}")
        return v

    def boolean(self, name: str, default: bool) -> bool:
        return self.get(name, bool, default, "true or false")

    def table(self, name: str) -> _Table:
        self.seen.add(name)
        return _Table(self.file, self.key(name), self.data.get(name, {}))

    def finish(self) -> None:
        unknown = [k for k in self.data if k not in self.seen]
        if unknown:
            k = unknown[0]
            close = difflib.get_close_matches(k, sorted(self.seen), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(sorted(self.seen))}"
            raise self.error(k, f"unknown key{hint}")


def _kind(v: Any) -> str:
    return {
        str: "a string", int: "a whole number", float: "a number", bool: "a boolean",
        list: "an array", dict: "a table",
    }.get(type(v), type(v).__name__)


def _str_table(t: _Table, name: str) -> dict[str, str]:
    sub = t.table(name)
    out: dict[str, str] = {}
    for k in sub.data:
        out[k] = sub.get(k, str, "", "a string")
    return out


def _shares(t: _Table) -> dict[str, float]:
    """A table of name = share in [0, 1] (accuracies by stratum, by prompt variant)."""
    out: dict[str, float] = {}
    for k in t.data:
        v = t.number(k, None, lo=0.0, hi=1.0)
        assert v is not None
        out[k] = v
    return out


def _read_sim(t: _Table) -> SimSettings:
    s = t.table("sim")
    d = SimSettings()
    sa = _shares(s.table("strata_accuracy"))
    prompt_acc = _shares(s.table("prompt_accuracy"))
    rpm = s.number("rpm", None, lo=0.0, lo_open=True, hi=MAX_RPM)
    out = SimSettings(
        base_latency_s=s.number("base_latency_s", d.base_latency_s, lo=0.0) or 0.0,
        per_token_s=s.number("per_token_s", d.per_token_s, lo=0.0) or 0.0,
        jitter=s.number("jitter", d.jitter, lo=0.0, hi=3.0) or 0.0,
        output_tokens=s.integer("output_tokens", d.output_tokens, lo=1) or 1,
        wrong_tokens=s.integer("wrong_tokens", None, lo=1),
        rpm=rpm,
        burst=s.number("burst", None, lo=1.0, hi=MAX_RPM),
        reject_cost=s.number("reject_cost", d.reject_cost, lo=0.0, hi=1.0) or 0.0,
        max_concurrent=s.integer("max_concurrent", None, lo=1, hi=MAX_CONCURRENCY),
        transient_rate=s.number("transient_rate", d.transient_rate, lo=0.0, hi=1.0) or 0.0,
        serial=s.boolean("serial", d.serial),
        exact_timing=s.boolean("exact_timing", d.exact_timing),
        accuracy=s.number("accuracy", d.accuracy, lo=0.0, hi=1.0) or 0.0,
        strata_accuracy=sa,
        prompt_accuracy=prompt_acc,
        reasoning_tokens=s.integer("reasoning_tokens", 0, lo=0) or 0,
        reasoning_per_token_s=s.number("reasoning_per_token_s", None, lo=0.0),
        declare_limits=s.boolean("declare_limits", d.declare_limits),
        declared_rpm=s.number("declared_rpm", None, lo=1.0, hi=MAX_RPM),
        declared_tpm=s.number("declared_tpm", None, lo=1.0, hi=MAX_RPM),
    )
    s.finish()
    return out


_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _read_terms(t: _Table) -> Terms | None:
    """``terms = { retention_days, trains_on_data, region, deprecation_notice_days, source, checked }``: each key
    left out is unknown (a bake-off says "ask the provider"), never a default."""
    if "terms" not in t.data:
        t.seen.add("terms")
        return None
    s = t.table("terms")
    checked = s.string("checked")
    if checked is not None and not _DATE_RE.match(checked):
        raise s.error("checked", f"expected the date the terms were read, as YYYY-MM-DD, got {checked!r}")
    region = s.string("region")
    if region is not None and not region.strip():
        raise s.error("region", "expected a region name such as \"us\" or \"eu\" (leave the key out when unknown)")
    out = Terms(
        retention_days=s.number("retention_days", None, lo=0.0),
        trains_on_data=s.get("trains_on_data", bool, None, "true or false"),
        region=region.strip().lower() if region else None,
        deprecation_notice_days=s.number("deprecation_notice_days", None, lo=0.0),
        source=s.string("source"),
        checked=checked,
    )
    s.finish()
    return out


def _read_requirements(t: _Table) -> Requirements | None:
    """[requirements] max_retention_days, trains_on_data, regions, min_deprecation_notice_days."""
    if not t.data:
        t.finish()
        return None
    regions = t.get("regions", list, [], "an array of region names, e.g. [\"eu\"]")
    if not all(isinstance(r, str) and r.strip() for r in regions):
        raise t.error("regions", f"expected an array of region names, e.g. [\"eu\"], got {regions!r}"[:300])
    out = Requirements(
        max_retention_days=t.number("max_retention_days", None, lo=0.0),
        trains_on_data=t.get("trains_on_data", bool, None, "true or false"),
        regions=tuple(r.strip().lower() for r in regions),
        min_deprecation_notice_days=t.number("min_deprecation_notice_days", None, lo=0.0),
    )
    t.finish()
    return out


def _read_bakeoff(t: _Table) -> BakeoffSettings:
    """[bakeoff] target_rate (requests/s) and/or target_concurrency (requests in flight)."""
    out = BakeoffSettings(
        target_rate=t.number("target_rate", None, lo=0.0, lo_open=True, hi=MAX_RPM / 60.0),
        target_concurrency=t.number("target_concurrency", None, lo=0.0, lo_open=True, hi=MAX_CONCURRENCY),
    )
    t.finish()
    return out


def _read_solver(t: _Table, provider: str, given: Callable[..., Any] | None, resolve: bool) -> dict[str, Any]:
    """A python model's solver settings (``factory``, ``concurrency``, ``processes``); other providers have none.

    ``factory`` is looked up beside the project file first, then among installed packages, like python scorers; a
    solver given from Python (`given`) needs none, and neither does a stored run read back (`resolve` false)."""
    factory = t.string("factory")
    from_python = t.string("solver")  # a stored run's note: a solver given from Python that has no importable name
    concurrency = t.string("concurrency", "thread") or "thread"
    processes = t.integer("processes", 1, lo=1, hi=MAX_SOLVER_PROCESSES) or 1
    if provider != "python":
        for name in ("factory", "concurrency", "processes", "solver"):
            if name in t.data:
                raise t.error(name, 'is a solver setting: it applies only to provider = "python"'
                              + ("; did you mean 'max_concurrency'?" if name == "concurrency" else ""))
        return {}
    if concurrency not in SOLVER_CONCURRENCY:
        close = difflib.get_close_matches(concurrency, SOLVER_CONCURRENCY, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise t.error("concurrency", f"expected one of {', '.join(SOLVER_CONCURRENCY)}, got {concurrency!r}{hint}")
    solver = given
    if solver is None and resolve:
        if factory is None and from_python is not None:
            raise t.error("factory", f"this run's solver was given from Python ({from_python}) and has no name another "
                                     "process can import (a lambda, a nested function, a script's __main__): resume it "
                                     "from Python, arenatui.bench(project, resume=RUN_ID), with the same project")
        if factory is None:
            raise t.error("factory", "is required for a python model: 'module:make_solver', a function called once "
                                     "per trial that returns the solver")
        from arenatui.scoring.plugin import PluginProblem, load_function

        try:
            solver = load_function(factory, t.file.parent)
        except PluginProblem as e:
            raise t.error("factory", str(e)) from None
    return {"factory": factory, "solver": solver, "concurrency": concurrency, "processes": processes}


def _read_model(t: _Table, solvers: Mapping[str, Callable[..., Any]] | None = None, resolve: bool = True
                ) -> ModelConfig:
    key = t.string("key", required=True)
    assert key is not None
    if not _KEY_RE.match(key):
        raise t.error("key", "expected 1-80 characters of letters, digits and _.:/@+- "
                      "(starting with a letter or digit)")
    if key.startswith(JUDGE_LANE_PREFIX):
        raise t.error("key", f"must not start with {JUDGE_LANE_PREFIX!r}: the console names judge lanes that way")
    given = (solvers or {}).get(key)
    provider = t.string("provider", "python" if given is not None else "sim") or "sim"
    if given is not None and provider != "python":
        raise t.error("provider", f'a model given a solver is provider = "python", got {provider!r}')
    spec = provider_spec(provider)
    if spec is None:
        names = provider_names()
        close = difflib.get_close_matches(provider, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise t.error("provider", f"expected one of {', '.join(names)}, got {provider!r}{hint}")
    model = t.string("model", key) or key
    base_url = t.string("base_url")
    if base_url is not None and not re.match(r"^https?://", base_url):
        raise t.error("base_url", f"expected an http:// or https:// URL, got {redact_url(base_url)!r}")
    if base_url is not None and REDACTED in base_url:
        base_url = _secret_from_project_file(t, key, "base_url", base_url)
    if base_url is None:
        base_url = spec.default_base_url
    api_key_env = t.string("api_key_env")
    if api_key_env is not None and not _ENV_NAME_RE.match(api_key_env):
        raise t.error("api_key_env", f"expected the NAME of an environment variable (not the key itself), got a "
                      f"value of {len(api_key_env)} characters")
    transport = t.string("transport", "auto") or "auto"
    if transport not in TRANSPORTS:
        close = difflib.get_close_matches(transport, TRANSPORTS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise t.error("transport", f"expected one of {', '.join(TRANSPORTS)}, got {transport!r}{hint}")
    extra = t.table("extra_body")
    headers = _str_table(t, "headers")
    for h, v in headers.items():
        if not _HEADER_NAME_RE.match(h):
            raise t.error(f"headers.{h}", "expected an HTTP header name (letters, digits and -)")
        if h.lower() in ("authorization", "x-api-key", "api-key", "proxy-authorization"):
            # A key written into the project would be stored with every run; keys come from the environment.
            raise t.error(f"headers.{h}", "must not hold credentials: name the environment variable that holds "
                          "the key in api_key_env (or this header's value in headers_env) instead")
        if v == REDACTED:  # a run's stored configuration: the value was never stored
            headers[h] = _secret_from_project_file(t, key, f"headers.{h}", v)
    headers_env = _str_table(t, "headers_env")
    for h, var in headers_env.items():
        if not _HEADER_NAME_RE.match(h):
            raise t.error(f"headers_env.{h}", "expected an HTTP header name (letters, digits and -)")
        if not _ENV_NAME_RE.match(var):
            raise t.error(f"headers_env.{h}", f"expected the NAME of an environment variable (not the value "
                          f"itself), got a value of {len(var)} characters")
        if h.lower() in {k.lower() for k in headers}:
            raise t.error(f"headers_env.{h}", "is also set in headers: give each header one value")
    m = ModelConfig(
        key=key,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        price_in_per_mtok=t.number("price_in_per_mtok", 0.0, lo=0.0) or 0.0,
        price_out_per_mtok=t.number("price_out_per_mtok", 0.0, lo=0.0) or 0.0,
        max_concurrency=t.integer("max_concurrency", None, lo=1, hi=MAX_CONCURRENCY),
        # The client's limiter admits a request only when a whole one fits in its minute.
        rpm=t.number("rpm", None, lo=1.0, hi=MAX_RPM),
        tpm=t.number("tpm", None, lo=1.0, hi=MAX_RPM),
        max_tokens=t.integer("max_tokens", None, lo=1),
        **_read_reasoning(t, provider),
        system=t.string("system"),
        stream=t.boolean("stream", True),
        transport=transport,
        headers=headers,
        headers_env=headers_env,
        extra_body=dict(extra.data),
        sim=_read_sim(t),
        candidate=t.boolean("candidate", True),
        prompts=tuple(_names(t, "prompts")),
        escalate_to=t.string("escalate_to"),
        terms=_read_terms(t),
        **_read_solver(t, provider, given, resolve),
    )
    t.finish()
    return m


def _read_reasoning(t: _Table, provider: str) -> dict[str, Any]:
    """A model's request settings for reasoning models: ``temperature`` (a number, or "omit"), ``token_limit_param``,
    ``reasoning_effort`` (OpenAI-compatible) and ``thinking = {budget_tokens = N}`` (Anthropic)."""
    omit = t.data.get("temperature") == "omit"
    if omit:
        t.seen.add("temperature")
        temperature = None
    else:
        try:
            temperature = t.number("temperature", None, lo=0.0, hi=2.0)
        except ConfigError:
            if isinstance(t.data.get("temperature"), str):
                raise t.error("temperature", f'expected a number from 0 to 2, or "omit" (send none: reasoning models '
                              f'refuse any but their own), got {t.data["temperature"]!r}') from None
            raise
    openai_like = provider not in ("anthropic", "sim", "python")
    param = t.string("token_limit_param")
    if param is not None:
        if param not in TOKEN_LIMIT_PARAMS:
            close = difflib.get_close_matches(param, TOKEN_LIMIT_PARAMS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise t.error("token_limit_param", f"expected one of {', '.join(TOKEN_LIMIT_PARAMS)}, got {param!r}{hint}")
        if provider == "anthropic":
            raise t.error("token_limit_param", "applies only to OpenAI-compatible models: Anthropic's API takes "
                                               "max_tokens, always")
    effort = t.string("reasoning_effort")
    if effort is not None:
        if effort not in REASONING_EFFORTS:
            raise t.error("reasoning_effort", f"expected one of {', '.join(REASONING_EFFORTS)}, got {effort!r}")
        if not openai_like:
            raise t.error("reasoning_effort", "applies only to OpenAI-compatible models"
                          + ("; an Anthropic model thinks with thinking = {budget_tokens = N}"
                             if provider == "anthropic" else ""))
    budget = None
    if "thinking" in t.data:
        th = t.table("thinking")
        budget = th.integer("budget_tokens", None, lo=MIN_THINKING_BUDGET)
        if budget is None:
            raise th.error("budget_tokens", f"is required: the most tokens the model may think, at least "
                                            f"{MIN_THINKING_BUDGET} (thinking = {{budget_tokens = N}})")
        th.finish()
        if provider != "anthropic":
            raise t.error("thinking", "applies only to Anthropic models"
                          + ("; an OpenAI-compatible model takes reasoning_effort" if openai_like else ""))
        mt = t.data.get("max_tokens")
        if isinstance(mt, int) and not isinstance(mt, bool) and mt <= budget:
            raise th.error("budget_tokens", f"expected fewer than this model's max_tokens ({mt}): the thinking "
                                            f"counts against max_tokens, and the answer needs room after it")
    return {"temperature": temperature, "omit_temperature": omit, "token_limit_param": param,
            "reasoning_effort": effort, "thinking_budget": budget}


def _secret_from_project_file(t: _Table, model_key: str, name: str, stored: str) -> str:
    """A credential that a run stored redacted (a header value, a base_url's password or token), read again
    from the project file the run came from, so that a resumed run sends what the first one did.

    `t.file` is that file when `t` reads a run's stored configuration; when it is the project file itself,
    the value read is the one written there (a literal "[redacted]" stays one).
    """
    where = t.key(name)
    value: Any = None
    try:
        raw = tomllib.loads(t.file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        raw = None
    models = raw.get("models") if isinstance(raw, dict) else None
    for m in models if isinstance(models, list) else ():
        if isinstance(m, dict) and m.get("key") == model_key:
            value = m
            for part in name.split(".", 1):
                value = value.get(part) if isinstance(value, dict) else None
    if not isinstance(value, str) or (name == "base_url" and redact_url(value) != stored):
        raise ConfigError(str(t.file), where, "was stored with this run without its credential (credentials are "
                          f"never stored), and {t.file} no longer gives model {model_key!r} the same "
                          f"{name.split('.')[0]}: restore the project file at that path (resume from the directory "
                          "the run started in), or start a new run")
    return value


def _read_mock(t: _Table, model_keys: list[str]) -> dict[str, MockFaults]:
    out: dict[str, MockFaults] = {}
    models = t.table("models")
    for key in models.data:
        if key not in model_keys:
            close = difflib.get_close_matches(key, model_keys, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise models.error(key, f"names no [[models]] key{hint}")
        m = models.table(key)
        d = MockFaults()
        faults = m.get("faults", list, [], "an array of fault names")
        for f in faults:
            if f not in MOCK_FAULTS:
                raise m.error("faults", f"expected fault names from {', '.join(MOCK_FAULTS)}, got {f!r}"[:300])
        form = m.string("retry_after", d.retry_after) or d.retry_after
        if form not in RETRY_AFTER_FORMS:
            raise m.error("retry_after", f"expected one of {', '.join(RETRY_AFTER_FORMS)}, got {form!r}")
        out[key] = MockFaults(
            faults=tuple(faults),
            rate=m.number("rate", d.rate, lo=0.0, hi=1.0) or 0.0,
            retry_after=form,
            retry_after_s=m.number("retry_after_s", d.retry_after_s, lo=0.0) or 0.0,
            echo_headers=m.boolean("echo_headers", d.echo_headers),
            trickle_s=m.number("trickle_s", d.trickle_s, lo=0.0, lo_open=True) or d.trickle_s,
            single_slot=m.boolean("single_slot", d.single_slot),
            declare_limits=m.boolean("declare_limits", d.declare_limits),
            declared_rpm=m.number("declared_rpm", None, lo=1.0, hi=MAX_RPM),
            declared_tpm=m.number("declared_tpm", None, lo=1.0, hi=MAX_RPM),
        )
        m.finish()
    models.finish()
    t.finish()
    return out


def _read_scorer(t: _Table) -> ScorerConfig:
    """One [[scorers]] table: the settings any scorer may carry here, its kind's own settings checked by the kind
    (arenatui.scoring.registry)."""
    kind = t.string("kind", required=True) or ""
    spec = scorer_kind(kind)
    if spec is None:
        kinds = scorer_kinds()
        close = difflib.get_close_matches(kind, kinds, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise t.error("kind", f"expected one of {', '.join(kinds)}, got {kind!r}{hint}")
    name = t.string("name", kind) or kind
    choices = t.get("choices", list, ["A", "B", "C", "D"], "an array of strings")
    if not choices or not all(isinstance(c, str) and c for c in choices):
        raise t.error("choices", "expected a non-empty array of non-empty strings")
    labels = t.get("labels", list, [], "an array of strings")
    if not all(isinstance(x, str) and x.strip() for x in labels) or len(set(labels)) != len(labels):
        raise t.error("labels", "expected an array of distinct non-empty strings")
    judge = JudgeSettings(
        judge=t.string("judge"), rubric=t.string("rubric"), scale=t.string("scale", "pass/fail") or "pass/fail",
        verdict=t.string("verdict"), pass_at=t.number("pass_at", None),
        sample=t.number("sample", 1.0, lo=0.0, lo_open=True) or 1.0)
    own = spec.read(t, judge)
    judge.scale = own.pop("scale", judge.scale)  # the kind's reading of it (llm_judge writes "1-5" one way)
    out = ScorerConfig(
        name=name,
        kind=kind,
        pattern=t.string("pattern"),
        choices=tuple(choices),
        tolerance=t.number("tolerance", 1e-6, lo=0.0) or 0.0,
        case_sensitive=t.boolean("case_sensitive", False),
        labels=tuple(labels),
        function=t.string("function"),
        timeout_s=t.number("timeout_s", 10.0, lo=0.0, hi=3600.0, lo_open=True) or 10.0,
        memory_mb=t.integer("memory_mb", 512, lo=64) or 512,
        judge=judge.judge,
        rubric=judge.rubric,
        scale=judge.scale,
        verdict=judge.verdict,
        pass_at=judge.pass_at,
        sample=judge.sample,
        **own,
    )
    t.finish()
    return out


def _read_case(file: Path, path: str, data: Any) -> Case:
    t = _Table(file, path, data)
    cid = t.data.get("id")
    if isinstance(cid, int) and not isinstance(cid, bool):
        cid = str(cid)
    t.seen.add("id")
    if cid is None:
        raise t.error("id", "is required: a non-empty string (or whole number) naming the case")
    if not isinstance(cid, str):
        # 1.5 would be stored as "1.5" but 1.50 too: an id must be exact, so only text or whole numbers.
        raise t.error("id", f"expected a string or whole number naming the case, got {_kind(cid)} {cid!r}"[:300])
    if not cid.strip():
        raise t.error("id", "must not be empty: a non-empty string (or whole number) naming the case")
    if "input" not in t.data:
        raise t.error("input", "is required: a prompt string, or an array of {role, content} messages")
    raw_input = t.data["input"]
    t.seen.add("input")
    inp: str | tuple[dict[str, str], ...]
    if isinstance(raw_input, str):
        inp = raw_input
    elif isinstance(raw_input, list) and raw_input:
        msgs = []
        for i, m in enumerate(raw_input):
            if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise t.error(f"input[{i}]", "expected a message table with string 'role' and 'content'")
            if m["role"] not in ("system", "user", "assistant"):
                raise t.error(f"input[{i}].role", f"expected system, user or assistant, got {m['role']!r}")
            msgs.append({"role": m["role"], "content": m["content"]})
        inp = tuple(msgs)
    else:
        raise t.error("input", f"expected a prompt string or a non-empty array of messages, got {_kind(raw_input)}")
    expected = t.data.get("expected")
    t.seen.add("expected")
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        expected = str(expected)
    if expected is not None and not isinstance(expected, str):
        raise t.error("expected", f"expected a string or number, got {_kind(expected)}")
    tags = t.get("tags", list, [], "an array of strings")
    if not all(isinstance(x, str) for x in tags):
        raise t.error("tags", "expected an array of strings")
    case = Case(
        id=cid.strip(),
        input=inp,
        expected=expected,
        tags=tuple(tags),
        stratum=t.string("stratum"),
        sealed=t.boolean("sealed", False),
        scorer=t.string("scorer"),
        tests=t.string("tests"),
        language=t.string("language"),
        cluster=t.string("cluster"),
        depends_on=tuple(_case_ids(t, "depends_on")),
        judge_expected=_judge_expected(t),
    )
    t.finish()
    return case


def _names(t: _Table, name: str) -> list[str]:
    """An array of names (prompt variants): non-empty strings, each once."""
    names = t.get(name, list, [], "an array of names")
    if not all(isinstance(x, str) and x.strip() for x in names) or len(set(names)) != len(names):
        raise t.error(name, "expected an array of distinct non-empty names")
    return list(names)


def _read_repair(t: _Table) -> Repair | None:
    """``[run] repair = { attempts = 1, on = [...], message = "...{error}..." }``."""
    if "repair" not in t.data:
        t.seen.add("repair")
        return None
    r = t.table("repair")
    d = Repair()
    on = _names(r, "on") if "on" in r.data else list(d.on)
    for i, mode in enumerate(on):
        if mode not in REPAIRABLE:
            close = difflib.get_close_matches(mode, REPAIRABLE, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise r.error(f"on[{i}]", f"expected failure modes from {', '.join(REPAIRABLE)}, got {mode!r}{hint}")
    message = r.string("message", d.message) or d.message
    if "{error}" not in message:
        raise r.error("message", "expected a follow-up message holding {error} (where the scorer's word on the failed "
                                 "answer goes)")
    out = Repair(attempts=r.integer("attempts", d.attempts, lo=0, hi=MAX_ATTEMPTS) or 0, on=tuple(on),
                 message=message)
    r.finish()
    return out


def _read_prompts(file: Path, raw: Any) -> tuple[PromptVariant, ...]:
    """``[[prompts]]``: named ways of asking the cases."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(str(file), "prompts", "expected an array of [[prompts]] tables (name, system, template)")
    out: list[PromptVariant] = []
    for i, rp in enumerate(raw):
        t = _Table(file, f"prompts[{i}]", rp)
        name = t.string("name", required=True) or ""
        if not _KEY_RE.match(name) or VARIANT_SEP in name:
            raise t.error("name", "expected 1-80 characters of letters, digits and _.:/@+- (starting with a letter or "
                                  "digit)")
        if any(p.name == name for p in out):
            raise t.error("name", f"duplicate prompt name {name!r}")
        template = t.string("template")
        if template is not None and "{input}" not in template:
            raise t.error("template", "expected a template holding {input} (where the case's prompt goes)")
        out.append(PromptVariant(name=name, system=t.string("system"), template=template))
        t.finish()
    return tuple(out)


def _prompts_checked(file: Path, prompts: tuple[PromptVariant, ...], project_names: tuple[str, ...],
                     models: list[ModelConfig]) -> None:
    """Every prompt name a project or model lists is a [[prompts]] entry; sim.prompt_accuracy names them too;
    escalate_to names another model."""
    known = [p.name for p in prompts]

    def check(key: str, names: Sequence[str]) -> None:
        for i, n in enumerate(names):
            if n not in known:
                close = difflib.get_close_matches(n, known, n=1)
                hint = (f"; did you mean '{close[0]}'?" if close else
                        f"; defined: {', '.join(known)}" if known else "; define it in a [[prompts]] table")
                raise ConfigError(str(file), f"{key}[{i}]" if key.endswith("prompts") else f"{key}.{n}",
                                  f"names no [[prompts]] entry {n!r}{hint}")

    check("project.prompts", project_names)
    keys = [m.key for m in models]
    for i, m in enumerate(models):
        check(f"models[{i}].prompts", m.prompts)
        check(f"models[{i}].sim.prompt_accuracy", list(m.sim.prompt_accuracy))
        if m.escalate_to is not None:
            if m.escalate_to == m.key:
                raise ConfigError(str(file), f"models[{i}].escalate_to", "names the model itself: name another "
                                                                         "[[models]] key")
            if m.escalate_to not in keys:
                close = difflib.get_close_matches(m.escalate_to, keys, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f"; the project has: {', '.join(keys)}"
                raise ConfigError(str(file), f"models[{i}].escalate_to",
                                  f"names no [[models]] entry {m.escalate_to!r}{hint}")


def _case_ids(t: _Table, name: str) -> list[str]:
    ids = t.get(name, list, [], "an array of case ids")
    out = [str(x) if isinstance(x, int) and not isinstance(x, bool) else x for x in ids]
    if not all(isinstance(x, str) and x.strip() for x in out):
        raise t.error(name, "expected an array of case ids (non-empty strings)")
    return [x.strip() for x in out]


def _judge_expected(t: _Table) -> tuple[tuple[str, str], ...]:
    """A case's answers with known verdicts: [{answer = "...", verdict = "PASS"}, ...] (checked against its scorer's
    scale once the scorers are known)."""
    what = 'an array of {answer = "...", verdict = "PASS" | "FAIL" | N} tables'
    raw = t.get("judge_expected", list, [], what)
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or set(item) != {"answer", "verdict"} or not isinstance(item["answer"], str):
            raise t.error(f"judge_expected[{i}]", f"expected {what}")
        v = item["verdict"]
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise t.error(f"judge_expected[{i}].verdict", f"expected PASS, FAIL or a number, got {_kind(v)}")
        out.append((item["answer"], str(v).strip().upper() if isinstance(v, str) else f"{float(v):g}"))
    return tuple(out)


def _read_case_file(project_file: Path, key: str, value: str,
                    origins: list[tuple[str, str]] | None = None) -> list[Case]:
    p = Path(value)
    if not p.is_absolute():
        p = project_file.parent / p
    if not p.exists():
        loop = symlink_loop(p)
        raise ConfigError(str(project_file), key, f"case file {str(p)!r} {loop}" if loop else
                          f"case file {str(p)!r} does not exist")
    cases: list[Case] = []
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson", ".json"):
        raise ConfigError(str(project_file), key, f"expected a .jsonl or .csv case file, got {p.name!r}")
    try:
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is dropped, not read as part of the first key.
        # newline="": the csv module sees quoted line breaks as they are, and JSON lines split only at \n.
        with p.open(encoding="utf-8-sig", newline="") as f:
            rows = _read_csv_rows(p, f) if suffix == ".csv" else _read_jsonl_rows(p, f)
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(str(p), None, f"cannot be read ({e})") from None
    for n, d in rows:
        check_values(p, f"line {n}", d)
        cases.append(_read_case(p, f"line {n}", d))
        if origins is not None:
            origins.append((str(p), f"line {n}.id"))
    return cases


_CSV_FIELD_CHARS = 1 << 30


def _read_csv_rows(p: Path, f: Any) -> list[tuple[int, Any]]:
    """(first line number, row as case data) for each record; a malformed record is an error naming its line."""
    # The csv module refuses fields past 128 KiB by default (a process-wide setting): long-context prompts are
    # longer. Raised once, never lowered, so that other readers in the process keep working.
    if csv.field_size_limit() < _CSV_FIELD_CHARS:
        csv.field_size_limit(_CSV_FIELD_CHARS)
    reader = csv.reader(f, strict=True)
    out: list[tuple[int, Any]] = []
    header: list[str] | None = None
    start = 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1  # a quoted field may span lines: name where the row starts
            if not any(field.strip() for field in record):
                continue
            if header is None:
                header = [h.strip() for h in record]
                blank = [i + 1 for i, h in enumerate(header) if not h]
                if blank:
                    raise ConfigError(str(p), f"line {line}", f"the header has an empty column name (column "
                                      f"{blank[0]}): name every column (id, input, expected, tags, ...)")
                dup = next((h for i, h in enumerate(header) if h in header[:i]), None)
                if dup is not None:
                    raise ConfigError(str(p), f"line {line}", f"the header names column {dup!r} twice")
                continue
            if len(record) != len(header):
                raise ConfigError(str(p), f"line {line}", f"has {len(record)} fields, the header has {len(header)} "
                                  f"({', '.join(header)}): put a field that holds a comma, a quote or a line "
                                  'break in double quotes, doubling the quotes inside it: "one, two" or "say ""hi"""')
            d: dict[str, Any] = {k: v for k, v in zip(header, record, strict=True) if v != ""}
            if "tags" in d:
                d["tags"] = [x.strip() for x in str(d["tags"]).replace(";", ",").split(",") if x.strip()]
            if "sealed" in d:
                d["sealed"] = str(d["sealed"]).strip().lower() in ("1", "true", "yes")
            out.append((line, d))
    except csv.Error as e:
        raise ConfigError(str(p), f"line {start}", f"is not valid CSV ({e}): a quoted field must end with a "
                          'quote and double every quote inside it, as in "say ""hi"""') from None
    return out


def _read_jsonl_rows(p: Path, f: Any) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    # Split at \n only: str.splitlines() would also split at U+2028 and other marks that JSON strings may hold.
    for n, line in enumerate(f.read().split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(str(p), f"line {n}", f"is not valid JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:  # json recurses per level of nesting
            raise ConfigError(str(p), f"line {n}", _TOO_DEEP) from None
        out.append((n, obj))
    return out




def project_from_dict(raw: Mapping[str, Any], file: Path,
                      solvers: Mapping[str, Callable[..., Any]] | None = None, *, resolve_solvers: bool = True
                      ) -> Project:
    """Validate TOML-shaped data into a Project; `solvers` gives python models their solver factories from Python
    (by model key) instead of a ``factory`` to import. A stored run read for its results passes `resolve_solvers`
    false: no solver runs, so none is imported."""
    check_values(file, "", raw)
    top = _Table(file, "", raw)
    proj = top.table("project")
    name = proj.string("name", file.stem) or file.stem
    theme = proj.string("theme")
    prompt_names = tuple(_names(proj, "prompts"))
    proj.finish()

    dft = top.table("defaults")
    defaults = Defaults(
        max_tokens=dft.integer("max_tokens", 256, lo=1) or 256,
        temperature=dft.number("temperature", 0.0, lo=0.0, hi=2.0) or 0.0,
        system=dft.string("system"),
    )
    dft.finish()

    rt = top.table("run")
    d = RunSettings()
    run = RunSettings(
        concurrency=rt.integer("concurrency", d.concurrency, lo=1, hi=MAX_CONCURRENCY) or 1,
        timeout_s=rt.number("timeout_s", d.timeout_s, lo=0.0, lo_open=True) or d.timeout_s,
        max_attempts=rt.integer("max_attempts", d.max_attempts, lo=1, hi=MAX_ATTEMPTS) or 1,
        backoff_base_s=rt.number("backoff_base_s", d.backoff_base_s, lo=0.0) or 0.0,
        backoff_cap_s=rt.number("backoff_cap_s", d.backoff_cap_s, lo=0.0) or 0.0,
        retry_budget_s=rt.number("retry_budget_s", d.retry_budget_s, lo=0.0, lo_open=True) or d.retry_budget_s,
        trials=rt.integer("trials", d.trials, lo=1, hi=MAX_TRIALS) or 1,
        seed=rt.integer("seed", d.seed) or 0,
        keep_sealed_outputs=rt.boolean("keep_sealed_outputs", d.keep_sealed_outputs),
        max_answer_chars=rt.integer("max_answer_chars", None, lo=1, hi=MAX_ANSWER_CHARS_LIMIT),
        allow_code_exec=rt.boolean("allow_code_exec", False),
        allow_weak_sandbox=rt.boolean("allow_weak_sandbox", False),
        max_concurrency_per_case=rt.integer("max_concurrency_per_case", None, lo=1, hi=MAX_CONCURRENCY),
        repair=_read_repair(rt),
    )
    rt.finish()
    top.seen.add("mock")  # [mock] is read after the models it names
    top.seen.add("strata")  # [strata] is read after the cases it weighs
    requirements = _read_requirements(top.table("requirements"))
    bakeoff = _read_bakeoff(top.table("bakeoff"))
    # Unknown top-level keys first: a typo like [[case]] should say so, not "the case set is empty".
    top.seen.update(("models", "scorers", "cases", "cases_file", "prompts"))
    top.finish()

    top.seen.add("models")
    raw_models = raw.get("models", [])
    if not isinstance(raw_models, list) or not raw_models:
        raise ConfigError(str(file), "models", "expected at least one [[models]] table")
    models: list[ModelConfig] = []
    seen_keys: dict[str, int] = {}
    for i, rm in enumerate(raw_models):
        m = _read_model(_Table(file, f"models[{i}]", rm), solvers, resolve_solvers)
        if m.key in seen_keys:
            raise ConfigError(str(file), f"models[{i}].key",
                              f"duplicate model key {m.key!r} (also models[{seen_keys[m.key]}].key)")
        seen_keys[m.key] = i
        models.append(m)

    top.seen.add("scorers")
    raw_scorers = raw.get("scorers", [])
    if not isinstance(raw_scorers, list):
        raise ConfigError(str(file), "scorers", "expected an array of [[scorers]] tables")
    scorers = [_read_scorer(_Table(file, f"scorers[{i}]", rs)) for i, rs in enumerate(raw_scorers)]
    names: dict[str, int] = {}
    for i, s in enumerate(scorers):
        if s.name in names:
            raise ConfigError(str(file), f"scorers[{i}].name", f"duplicate scorer name {s.name!r}")
        names[s.name] = i
    if not scorers:
        scorers = [ScorerConfig(name="exact", kind="exact")]

    cases: list[Case] = []
    top.seen.add("cases")
    top.seen.add("cases_file")
    raw_cases = raw.get("cases", [])
    if not isinstance(raw_cases, list):
        raise ConfigError(str(file), "cases", "expected an array of [[cases]] tables")
    origins: list[tuple[str, str]] = []
    for i, rc in enumerate(raw_cases):
        cases.append(_read_case(file, f"cases[{i}]", rc))
        origins.append((str(file), f"cases[{i}].id"))
    cases_file = raw.get("cases_file")
    if cases_file is not None:
        files = [cases_file] if isinstance(cases_file, str) else cases_file
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ConfigError(str(file), "cases_file", "expected a path (or array of paths) to .jsonl/.csv files")
        for j, f in enumerate(files):
            cases.extend(_read_case_file(file, "cases_file" if isinstance(cases_file, str) else f"cases_file[{j}]", f,
                                         origins))
    if not cases:
        raise ConfigError(str(file), "cases", "the case set is empty: add [[cases]] tables or a cases_file")
    seen_ids: dict[str, tuple[str, str]] = {}
    scorer_names = {s.name for s in scorers}
    for c, (where_file, where_key) in zip(cases, origins, strict=True):
        if c.id in seen_ids:
            first_file, first_key = seen_ids[c.id]
            also = first_key if first_file == where_file else f"{first_file}: {first_key}"
            raise ConfigError(where_file, where_key,
                              f"duplicate case id {c.id!r} (also {also}): every case id must be unique")
        seen_ids[c.id] = (where_file, where_key)
        if c.scorer is not None and c.scorer not in scorer_names:
            close = difflib.get_close_matches(c.scorer, sorted(scorer_names), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; defined: {', '.join(sorted(scorer_names))}"
            raise ConfigError(str(file), f"cases[id={c.id}].scorer", f"names no [[scorers]] entry {c.scorer!r}{hint}")
        if c.judge_expected:
            scorer = next(s for s in scorers if s.name == (c.scorer or scorers[0].name))
            _check_judge_expected(where_file, where_key.removesuffix(".id"), c, scorer)
    for i, s in enumerate(scorers):
        if s.kind == "code_exec" and not run.allow_code_exec:
            raise ConfigError(str(file), f"scorers[{i}].kind",
                              "code_exec runs model-written code on this machine: set [run] allow_code_exec = true "
                              "to allow it (it guards against accidents, not attacks; see README)")
    _chains_checked(file, cases)
    models = _judges_checked(file, raw_models, models, scorers)
    prompts = _read_prompts(file, raw.get("prompts"))
    _prompts_checked(file, prompts, prompt_names, models)
    mock = _read_mock(top.table("mock"), [m.key for m in models])
    weights = _read_strata(top.table("strata"), cases)
    top.finish()
    return Project(
        name=name, path=file, defaults=defaults, run=run, models=tuple(models), cases=tuple(cases),
        scorers=tuple(scorers), theme=theme, mock=mock, strata_weights=weights, prompts=prompts,
        prompt_names=prompt_names, requirements=requirements, bakeoff=bakeoff,
    )


def _read_strata(t: _Table, cases: list[Case]) -> dict[str, float]:
    """[strata] weights = { easy = 0.7, hard = 0.3 }: each stratum's share in production (normalised when read)."""
    w = t.table("weights")
    t.finish()
    strata = sorted({c.stratum for c in cases if c.stratum is not None})
    out: dict[str, float] = {}
    for name in w.data:
        if name not in strata:
            close = difflib.get_close_matches(name, strata, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the cases' strata: {', '.join(strata) or 'none'}"
            raise w.error(name, f"names no stratum of the cases; {hint}")
        v = w.number(name, None, lo=0.0, lo_open=True)
        assert v is not None
        out[name] = v
    w.finish()
    return out


def _chains_checked(file: Path, cases: list[Case]) -> None:
    """Every ``depends_on`` names a case of the project, and no chain leads back to where it started."""
    ids = {c.id for c in cases}
    for c in cases:
        for d in c.depends_on:
            if d not in ids:
                close = difflib.get_close_matches(d, sorted(ids), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ConfigError(str(file), f"cases[id={c.id}].depends_on", f"names no case {d!r}{hint}")
            if d == c.id:
                raise ConfigError(str(file), f"cases[id={c.id}].depends_on", "names the case itself")
        for ref in OUTPUT_REF.findall(c.prompt_text()):
            if ref not in c.depends_on:
                raise ConfigError(str(file), f"cases[id={c.id}].input", f"uses {{output:{ref}}} but {ref!r} is not in "
                                  "its depends_on: list the cases whose answers it uses")
    cycle = chain_cycle({c.id: c.depends_on for c in cases})
    if cycle:
        raise ConfigError(str(file), f"cases[id={cycle[0]}].depends_on",
                          f"makes a cycle ({' -> '.join(cycle)}): a case cannot wait for its own answer")


def chain_cycle(parents: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle among cases' ``depends_on`` (the ids along it, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the path being walked, 2 done
    for start in parents:
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(parents.get(start, ())))]
        state[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(parents.get(nxt, ()))))
    return None


def _check_judge_expected(file: str, key: str, c: Case, scorer: ScorerConfig) -> None:
    """Known verdicts need a judge, and each must be one its scale can give."""
    if scorer.kind != "llm_judge":
        raise ConfigError(file, f"{key}.judge_expected", f"applies to cases scored by an llm_judge scorer; this case's "
                                                         f"scorer {scorer.name!r} is {scorer.kind}")
    scale = scorer.scale_range()
    for i, (_, v) in enumerate(c.judge_expected):
        if scale is None:
            ok = v in ("PASS", "FAIL")
        else:
            try:
                ok = scale[0] <= float(v) <= scale[1]
            except ValueError:
                ok = False
        if not ok:
            want = "PASS or FAIL" if scale is None else f"a number on the scale {scale[0]}-{scale[1]}"
            raise ConfigError(file, f"{key}.judge_expected[{i}].verdict", f"expected {want} (scorer "
                                                                          f"{scorer.name!r}), got {v!r}")


def _judges_checked(file: Path, raw_models: list[Any], models: list[ModelConfig],
                    scorers: list[ScorerConfig]) -> list[ModelConfig]:
    """Every llm_judge scorer names a model; a model named as a judge only judges unless it says `candidate = true`."""
    keys = {m.key: i for i, m in enumerate(models)}
    judges: set[str] = set()
    for i, s in enumerate(scorers):
        if s.kind != "llm_judge" or s.judge is None:
            continue
        if s.judge not in keys:
            close = difflib.get_close_matches(s.judge, list(keys), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f"; the project has: {', '.join(keys)}"
            raise ConfigError(str(file), f"scorers[{i}].judge", f"names no [[models]] entry {s.judge!r}{hint}")
        judges.add(s.judge)
    out = []
    for i, m in enumerate(models):
        said = isinstance(raw_models[i], dict) and "candidate" in raw_models[i]
        if m.key in judges and not said:
            m = dataclasses.replace(m, candidate=False)
        out.append(m)
    if not any(m.candidate for m in out):
        raise ConfigError(str(file), "models", "no model to evaluate: every model is a judge (set candidate = true on "
                                               "a judge that should also answer the cases)")
    return out


def solver_spec(fn: Callable[..., Any]) -> str | None:
    """``module:name`` that imports `fn` again in another process (resume from the CLI), or None when nothing
    can (a lambda, a function defined inside another, an object, a script run as __main__)."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not name or module == "__main__" or module.startswith("arenatui_user_scorer_"):
        return None
    if "<" in name or "." in name:
        return None
    return f"{module}:{name}"


def _prune(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != {} and v != ()}


def _scorer_dict(s: ScorerConfig) -> dict[str, Any]:
    d = dict(_prune(dataclasses.asdict(s)), choices=list(s.choices))
    d.update(d.pop("options", {}))  # an added kind's own settings sit in its table, where it reads them
    if s.labels:
        d["labels"] = list(s.labels)
    return d


def project_to_dict(p: Project) -> dict[str, Any]:
    """The project as TOML-shaped data with cases inline: what a run stores and resumes from.

    Holds only the *names* of API-key and header variables, never their values; header values and credentials
    in base_url are redacted.
    """
    def case(c: Case) -> dict[str, Any]:
        d = _prune(dataclasses.asdict(c))
        d["input"] = c.input if isinstance(c.input, str) else [dict(m) for m in c.input]
        if c.tags:
            d["tags"] = list(c.tags)
        if c.depends_on:
            d["depends_on"] = list(c.depends_on)
        if not c.sealed:
            d.pop("sealed", None)
        if c.judge_expected:
            d["judge_expected"] = [{"answer": a, "verdict": v} for a, v in c.judge_expected]
        return d

    def model(m: ModelConfig) -> dict[str, Any]:
        d = _prune({f.name: getattr(m, f.name) for f in dataclasses.fields(m)
                    if f.name not in ("sim", "solver", "variant", "terms")})
        if m.prompts:
            d["prompts"] = list(m.prompts)
        if m.terms is not None:
            d["terms"] = _prune(dataclasses.asdict(m.terms))
        for k in ("headers", "headers_env", "extra_body"):
            if k in d:
                d[k] = dict(d[k])
        if m.provider != "python":
            for k in ("concurrency", "processes", "factory"):
                d.pop(k, None)
        elif m.factory is None and m.solver is not None:
            spec = solver_spec(m.solver)
            if spec is not None:
                d["factory"] = spec  # so that resume, from the CLI too, can import it again
            else:  # said on a resume from the CLI: only Python, given the object again, can resume it
                d["solver"] = str(getattr(m.solver, "__qualname__", type(m.solver).__name__))[:200]
        # Credentials never reach the store: header values and a base_url's userinfo and credential parameters
        # are redacted (resume reads them again from the project file, see _secret_from_project_file).
        if d.pop("omit_temperature", False):
            d["temperature"] = "omit"
        if "thinking_budget" in d:
            d["thinking"] = {"budget_tokens": d.pop("thinking_budget")}
        if m.headers:
            d["headers"] = dict.fromkeys(m.headers, REDACTED)
        if m.base_url is not None:
            d["base_url"] = redact_url(m.base_url)
        sim = _prune(dataclasses.asdict(m.sim))
        if m.provider == "sim" or sim != _prune(dataclasses.asdict(SimSettings())):
            d["sim"] = sim
        return d

    run = {k: v for k, v in dataclasses.asdict(p.run).items() if v is not None}
    if p.run.repair is not None:
        run["repair"] = dict(run["repair"], on=list(p.run.repair.on))
    out: dict[str, Any] = {
        "project": _prune({"name": p.name, "theme": p.theme, "prompts": list(p.prompt_names) or None}),
        "defaults": _prune(dataclasses.asdict(p.defaults)),
        "run": run,
        "models": [model(m) for m in p.models],
        "scorers": [_scorer_dict(s) for s in p.scorers],
        "cases": [case(c) for c in p.cases],
    }
    if p.strata_weights:
        out["strata"] = {"weights": dict(p.strata_weights)}
    if p.prompts:
        out["prompts"] = [_prune(dataclasses.asdict(v)) for v in p.prompts]
    if p.requirements is not None:
        out["requirements"] = dict(_prune(dataclasses.asdict(p.requirements)), regions=list(p.requirements.regions))
        if not p.requirements.regions:
            out["requirements"].pop("regions")
    if _prune(dataclasses.asdict(p.bakeoff)):
        out["bakeoff"] = _prune(dataclasses.asdict(p.bakeoff))
    if p.mock:
        out["mock"] = {"models": {k: dict(dataclasses.asdict(f), faults=list(f.faults)) for k, f in p.mock.items()}}
    return out

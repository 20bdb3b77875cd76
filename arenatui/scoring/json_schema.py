"""The json_schema scorer: the answer (or its first fenced JSON block) must parse and validate.

Validation is the `jsonschema` library's (the draft named by the schema's ``$schema``, 2020-12 when it
names none), not a hand validator: schemas use ``$ref``, ``oneOf``, formats and drafts a hand validator
would get subtly wrong. The failure says which path failed, in JSONPath form (``$.items[2].price``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\r?\n(.*?)```", re.DOTALL)


class SchemaProblem(ValueError):
    """A schema that is not a valid JSON Schema (raised when the project is loaded, not per answer)."""


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise SchemaProblem when ``schema`` is not a valid schema for its own draft."""
    from jsonschema import exceptions, validators

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as e:
        where = _path(e.absolute_path)
        raise SchemaProblem(f"{e.message} (at {where} in the schema)") from None


def extract_json(output: str) -> tuple[Any, str | None]:
    """The JSON value an answer carries: the whole answer, else its first fenced block.

    Returns (value, None), or (None, why) when there is none that parses.
    """
    text = output.strip()
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        pass
    m = _FENCE.search(output)
    if m is None:
        return None, "the answer is not JSON and has no fenced JSON block"
    try:
        return json.loads(m.group(1)), None
    except RecursionError:
        return None, "the fenced JSON block is nested too deeply"
    except ValueError as e:
        return None, f"the fenced JSON block does not parse ({e})"


def _path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


class SchemaValidator:
    """One compiled schema; `validate` returns None when an answer fits, else what failed and where."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        from jsonschema import validators

        check_schema(schema)
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        self._validator = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def problem(self, output: str) -> str | None:
        from jsonschema import exceptions

        value, why = extract_json(output)
        if why is not None:
            return why
        try:
            error = exceptions.best_match(self._validator.iter_errors(value))
        except RecursionError:
            return "the JSON value is nested too deeply to validate"
        if error is None:
            return None
        return f"{_path(error.absolute_path)}: {error.message}"

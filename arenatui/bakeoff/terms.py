"""A provider's terms against the project's requirements: met, failed (with term, requirement and source), or
unknown ("ask the provider", never assumed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arenatui.config.schema import Requirements, Terms

ASK = "ask the provider"
"""What an unknown term says: never assumed either way."""
TERMS = ("retention_days", "trains_on_data", "region", "deprecation_notice_days")
"""The terms a bake-off reads, in the order it lists them."""


@dataclass(frozen=True, slots=True)
class TermCheck:
    """One term of one model: its value (None: unknown), the requirement on it (None: none), and whether it meets
    it (None: unknown or no requirement)."""

    term: str
    value: Any
    requirement: str | None
    met: bool | None
    source: str | None
    checked: str | None

    @property
    def shown(self) -> str:
        return ASK if self.value is None else _value(self.term, self.value)

    @property
    def words(self) -> str:
        value = self.shown
        if self.requirement is None:
            return f"{self.term}: {value}"
        verdict = {True: "meets", False: "fails", None: "unknown against"}[self.met]
        return f"{self.term}: {value} ({verdict} the requirement {self.requirement})"


def _value(term: str, v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g} days" if term.endswith("days") else f"{v:g}"
    return str(v)


def terms_from_stored(model: Mapping[str, Any]) -> Terms | None:
    """A model's terms from a run's stored configuration (validated when it was stored; read as stored)."""
    t = model.get("terms")
    if not isinstance(t, Mapping):
        return None
    return Terms(**{k: t[k] for k in ("retention_days", "trains_on_data", "region", "deprecation_notice_days",
                                      "source", "checked") if k in t})


def requirements_from_stored(config: Mapping[str, Any]) -> Requirements | None:
    r = config.get("requirements")
    if not isinstance(r, Mapping):
        return None
    return Requirements(max_retention_days=r.get("max_retention_days"), trains_on_data=r.get("trains_on_data"),
                        regions=tuple(r.get("regions") or ()),
                        min_deprecation_notice_days=r.get("min_deprecation_notice_days"))


def check_terms(terms: Terms | None, req: Requirements | None) -> list[TermCheck]:
    """Every term of a model, against its requirement: unknown terms say so (and fail no requirement, nor meet it)."""
    t = terms or Terms()
    r = req or Requirements()
    out = []
    for term in TERMS:
        value = getattr(t, term)
        requirement: str | None = None
        met: bool | None = None
        if term == "retention_days" and r.max_retention_days is not None:
            requirement = f"max_retention_days = {r.max_retention_days:g}"
            met = None if value is None else value <= r.max_retention_days
        elif term == "trains_on_data" and r.trains_on_data is False:
            requirement = "trains_on_data = false"
            met = None if value is None else value is False
        elif term == "region" and r.regions:
            requirement = f"regions = {', '.join(r.regions)}"
            met = None if value is None else value in r.regions
        elif term == "deprecation_notice_days" and r.min_deprecation_notice_days is not None:
            requirement = f"min_deprecation_notice_days = {r.min_deprecation_notice_days:g}"
            met = None if value is None else value >= r.min_deprecation_notice_days
        out.append(TermCheck(term, value, requirement, met, t.source, t.checked))
    return out

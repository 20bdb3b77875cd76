"""DESIGN.md's layers, enforced: every import of every module, read with the AST (lazy ones inside functions and
under TYPE_CHECKING included), checked against the rules. A rule broken names the module and what it imports."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "arenatui"

ENTRIES = ("arenatui.cli", "arenatui.api")
"""The entry points (the command line, and bench()/abench() from Python): they dispatch to every command and open
the console, so they may import anything."""
VIEWS = {
    "arenatui.tui": "the console and results screens",
    "arenatui.commands.evaluate": "the evaluate summary",
    "arenatui.commands.report": "arena report and the bake-off page",
    "arenatui.commands.bakeoff_build": "arena report and the bake-off page",
    "arenatui.commands.bakeoff_page": "arena report and the bake-off page",
    "arenatui.commands.bakeoff": "arena report and the bake-off page",
    "arenatui.commands.export": "arena export",
    "arenatui.commands.compare": "arena compare",
    "arenatui.commands.load_series": "arena compare",
    "arenatui.commands.headless": "the headless progress line",
    "arenatui.commands.load_report": "a load run's tables, report and export",
    "arenatui.commands.load_files": "a load run's tables, report and export",
}
"""Views, by module prefix: each reads the layers below it and none reads another (what two share belongs below
them); modules with the same description are one view."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def imports() -> dict[str, frozenset[str]]:
    """Module → every module it imports (for `from m import n`: m, and m.n in case n is a submodule)."""
    out: dict[str, frozenset[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
        out[name] = frozenset(found)
    return out


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _view(name: str) -> str | None:
    return next((what for v, what in VIEWS.items() if _under(name, v)), None)


def _broken(rule: object) -> list[str]:
    return [f"{m} imports {x}" for m, xs in imports().items() for x in sorted(xs) if rule(m, x)]  # type: ignore[operator]


def test_the_reader_sees_lazy_imports() -> None:
    # the entry point imports the console only inside functions: the reader must see those
    assert any(_under(x, "arenatui.tui") for x in imports()["arenatui.cli"])
    assert "arenatui.kernel.events" in imports()["arenatui.engine"]


def test_nothing_below_the_ui_imports_textual_or_the_ui() -> None:
    assert _broken(lambda m, x: not _under(m, "arenatui.tui") and m not in ENTRIES
                   and (_under(x, "textual") or _under(x, "arenatui.tui"))) == []


def test_the_store_never_climbs_back_to_config_or_plan() -> None:
    assert _broken(lambda m, x: _under(m, "arenatui.store")
                   and (_under(x, "arenatui.config") or _under(x, "arenatui.plan"))) == []


def test_no_view_imports_another_view() -> None:
    known = set(imports())
    assert _broken(lambda m, x: x in known and _view(m) is not None and _view(x) not in (None, _view(m))) == []


@pytest.mark.parametrize("module", ["arenatui.kernel.events", "arenatui.kernel.judge_sample", "arenatui.kernel.limits"])
def test_leaves_import_nothing_of_arenatui(module: str) -> None:
    assert sorted(x for x in imports()[module] if _under(x, "arenatui")) == []


def test_the_providers_base_knows_no_implementation() -> None:
    """The protocol is the base; implementations import it, the registry names them: no circle between them."""
    assert sorted(x for x in imports()["arenatui.providers.base"] if _under(x, "arenatui.providers")) == []


def test_the_core_never_imports_a_view_or_the_entry_point() -> None:
    core = ("arenatui.config", "arenatui.plan", "arenatui.providers", "arenatui.engine", "arenatui.store",
            "arenatui.stats", "arenatui.tuning", "arenatui.scoring", "arenatui.session.live")
    assert _broken(lambda m, x: any(_under(m, c) for c in core)
                   and (_view(x) is not None or x in ENTRIES)) == []


def test_only_the_entry_points_reach_the_commands() -> None:
    """`arenatui.commands` holds the verbs' drivers and printing: the CLI (and the Python API) call them, nothing
    below them does (what a command and a lower layer share belongs in the lower layer)."""
    assert _broken(lambda m, x: _under(x, "arenatui.commands") and not _under(m, "arenatui.commands")
                   and m not in ENTRIES) == []


def test_no_command_opens_the_console() -> None:
    """A command prints; the entry point opens the console (it passes a callback where a command needs one)."""
    assert _broken(lambda m, x: _under(m, "arenatui.commands")
                   and (_under(x, "arenatui.tui") or _under(x, "textual"))) == []


def test_tuning_is_pure() -> None:
    """The tuner reads observations and gives verdicts: running sweeps, reading projects and the store are the
    drivers' (`arenatui.commands.tune_runs`)."""
    assert _broken(lambda m, x: _under(m, "arenatui.tuning")
                   and any(_under(x, f"arenatui.{d}") for d in ("sweep", "config", "plan", "store", "commands"))) == []


def test_the_results_view_never_reaches_into_the_run_screens() -> None:
    """The run screen opens the results view; the results view is a package of its own (either imports first)."""
    assert _broken(lambda m, x: _under(m, "arenatui.tui.results") and _under(x, "arenatui.tui.screens")) == []


def test_views_steer_a_sweep_through_its_control_surface() -> None:
    """`Sweep.control` (engine.control.SweepControl: set_concurrency, set_model_cap, pause, resume, cancel, reads),
    never `sweep.runner`: the runner's lanes, queues and workers are the engine's."""
    reaching = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module(path)
        if _view(name) is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "runner":
                reaching.append(f"{name}:{node.lineno}")
    assert reaching == []


def test_every_module_imports_first() -> None:
    """Whichever module a process imports first (a solver worker imports its own), it loads: no circle between
    modules that only an import order hides. Each is imported with every arenatui module forgotten before it."""
    import subprocess
    import sys

    names = sorted(m for m in imports() if m != "arenatui.__main__")
    code = ("import importlib, sys\nbad = []\n"
            f"for name in {names!r}:\n"
            "    for k in [k for k in sys.modules if k == 'arenatui' or k.startswith('arenatui.')]:\n"
            "        del sys.modules[k]\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception as e:\n"
            "        bad.append(f'{name}: {type(e).__name__}: {e}')\n"
            "print('\\n'.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600)
    assert out.stdout.strip() == ""

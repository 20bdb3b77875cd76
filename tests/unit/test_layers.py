"""DESIGN.md's layers, enforced by one ordered contract: every import of every module, read with the AST (lazy ones
inside functions and under TYPE_CHECKING included), checked against the package tree's order. A package of
arenatui not placed in `LAYERS` fails the test, so a new package is checked by where it sits, not by a rule someone
remembers to write. A broken rule names the module and what it imports."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "arenatui"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__", "arenatui"),
    ("cli", "api"),
    ("commands", "tui"),
    ("bakeoff", "present"),
    ("results", "session", "mockserver"),
    ("load",),
    ("engine",),
    ("plan",),
    ("project",),
    ("providers", "scoring"),
    ("config", "store"),
    ("tuning",),
    ("stats",),
    ("kernel",),
)
"""The package's top-level units, highest first (`arenatui` is the package's own `__init__`). A module may import
its own unit and the units of the layers below its own; the units of one layer are siblings that never import each
other (what two share belongs below them):
- kernel: leaves (errors, events and lane keys, limits, units, paths, redact, text, threads), importing nothing else;
- stats, then tuning: pure, over arrays and observations; config (the schema) and store (SQL, its own records);
- providers and scoring over the schema; project (a project file read and written, validated by their registries);
- plan, engine, load (open-loop runs); results (the read model), session (a sweep live) and the mock server;
- bakeoff and present (columns, charts, wording, safe text); views: commands (printing) and tui (the console);
- the entry points, cli and api, and above them the package's lazy names and `python -m arenatui`."""

FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("arenatui.store", "arenatui.stats", "the store returns its own records: arenatui.results builds from them"),
    ("arenatui.store", "arenatui.tuning", "the store returns its own records: arenatui.results builds from them"),
    ("arenatui.tui.results", "arenatui.tui.screens", "the run screen opens the results view, never the reverse"),
)
"""Narrower than the layers allow: (importer prefix, imported prefix, why)."""

OUTSIDE_ONLY_IN = {"sqlite3": "arenatui.store", "textual": "arenatui.tui"}
"""A library only one package may import: SQL is the store's (sqlite3.Error mapped to StoreError there, once);
Textual is the console's."""


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under `if TYPE_CHECKING:` (read by type checkers, never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


@cache
def _read(*, run_only: bool) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _type_only(tree) if run_only else set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
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


def imports() -> dict[str, frozenset[str]]:
    """Module → every module it imports, lazy and TYPE_CHECKING ones included (for `from m import n`: m, and m.n in
    case n is a submodule)."""
    return _read(run_only=False)


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _unit(name: str) -> str | None:
    """A module's top-level unit (`arenatui.store.db` → 'store'); None outside arenatui."""
    parts = name.split(".")
    if parts[0] != "arenatui":
        return None
    return "arenatui" if len(parts) == 1 else parts[1]


def _level() -> dict[str, int]:
    return {u: i for i, layer in enumerate(LAYERS) for u in layer}


def _known(x: str) -> str | None:
    """The arenatui module `x` names (`from m import n` gives m.n, a name rather than a module, when n is no
    submodule): x itself, or the module it is a name of."""
    mods = imports()
    if x in mods:
        return x
    head = x.rpartition(".")[0]
    return head if head in mods else None


def test_the_reader_sees_lazy_imports() -> None:
    # the entry point imports the console only inside functions: the reader must see those
    assert any(_under(x, "arenatui.tui") for x in imports()["arenatui.cli"])
    assert any(_under(x, "arenatui.kernel.events") for x in imports()["arenatui.store.writer"])


def test_every_unit_has_its_place_in_the_layers() -> None:
    placed = _level()
    assert len(placed) == sum(len(layer) for layer in LAYERS), "a unit is listed twice"
    units = {u for m in imports() if (u := _unit(m)) is not None}
    assert sorted(units - placed.keys()) == [], "a package or root module with no place in LAYERS"
    assert sorted(placed.keys() - units) == [], "LAYERS names a unit that is gone"


def test_every_import_goes_down_the_layers() -> None:
    """The one ordered contract: downward, or within a module's own unit; siblings of one layer are independent.
    No exception is listed: a module that needs one belongs elsewhere."""
    level = _level()
    broken = []
    for m, xs in imports().items():
        mu = _unit(m)
        for x in sorted(xs):
            target = _known(x)
            xu = _unit(target) if target else None
            if target is None or xu is None or mu is None or xu == mu:
                continue
            if level[xu] <= level[mu]:
                how = "a sibling" if level[xu] == level[mu] else "a layer above"
                broken.append(f"{m} imports {target} ({how})")
    assert broken == []


def test_the_forbidden_imports() -> None:
    broken = []
    for m, xs in imports().items():
        for x in sorted(xs):
            target = _known(x) or x
            for importer, imported, why in FORBIDDEN:
                if _under(m, importer) and _under(target, imported):
                    broken.append(f"{m} imports {target}: {why}")
    assert broken == []


def test_sql_is_the_stores_and_textual_the_consoles() -> None:
    broken = [f"{m} imports {x}" for m, xs in imports().items() for x in sorted(xs)
              for lib, home in OUTSIDE_ONLY_IN.items() if _under(x, lib) and not _under(m, home)]
    assert broken == []


def test_the_kernel_imports_nothing_of_arenatui_outside_it() -> None:
    assert [f"{m} imports {x}" for m, xs in imports().items() if _under(m, "arenatui.kernel")
            for x in sorted(xs) if _under(x, "arenatui") and not _under(x, "arenatui.kernel")] == []


def test_no_package_cycle_and_no_cycle_inside_a_package() -> None:
    """No circle between any two modules at any depth (`commands.load` and `commands.shards`, `providers.solver` and
    `solver_pool`), lazy imports included: a circle only an import order hides is a circle. Imports under
    TYPE_CHECKING never run and are left out here (the layers above read them too, so they still go downward)."""
    mods = _read(run_only=True)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, xs in mods.items():
        for x in xs:
            t = _known(x)
            if t is not None and t != m and not _under(m, t):  # a package importing its own __init__ is no edge
                edges[m].add(t)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []


def test_views_steer_a_sweep_through_its_control_surface() -> None:
    """`Sweep.control` (engine.control.SweepControl: set_concurrency, set_model_cap, pause, resume, cancel, reads),
    never `sweep.runner`: the runner's lanes, queues and workers are the engine's."""
    reaching = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module(path)
        if _unit(name) not in ("commands", "tui", "present", "bakeoff", "cli", "api"):
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

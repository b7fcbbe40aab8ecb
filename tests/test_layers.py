"""The package's shape: its rooms import only downwards, with no cycles, and import inside functions
only to keep a heavy dependency lazy.

Every module under ``src/nlgbias`` is parsed with ``ast``; every import is counted, at module level
and inside functions.  A *room* is a subpackage (``nlgbias.metrics``) or a module at the package
root (``nlgbias.errors``); the package root's ``__init__`` and the command line are rooms of their
own.  Each room sits on one layer of :data:`LAYERS`, listed from the bottom up.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "nlgbias"

# The layers, from the bottom up.  A room may import rooms of its own layer (without a cycle) and
# of the layers below it, never one above.  Training and annotation sit under the report: they
# read scorers, metrics and the store only, and the report's regard-validity section shows the
# hard examples that annotation's sampler picks.  Analyses and probes sit over the report: an
# analysis is its statistics plus its report section, and the report is handed the sections.
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"errors", "keys", "words", "text", "sampling", "progress", "inputs", "resources", "validate",
                    "registry", "urls", "safe_names", "submodules"}),
    ("store", {"store"}),
    ("suites", {"suites"}),
    ("models", {"models"}),
    ("scorers", {"scorers", "embeddings"}),
    ("metrics", {"metrics"}),
    ("training", {"training"}),
    ("annotation", {"annotation"}),
    ("checklist", {"checklist"}),
    ("report", {"report"}),
    ("analyses", {"analyses"}),
    ("probes", {"probes"}),
    ("pipeline", {"pipeline"}),
    ("command line", {"cli", "__main__", "nlgbias"}),
]
LAYER = {room: index for index, (_, rooms) in enumerate(LAYERS) for room in rooms}

# Imported inside functions so that importing nlgbias stays light: a model, a GPU stack, a cluster,
# or an optional extra.  An nlgbias module counts as heavy when it imports one of these at module level.
HEAVY = {"torch", "transformers", "ray", "onnx", "onnxruntime", "safetensors", "gguf", "accelerate", "sklearn",
         "openpyxl", "resvg_py", "textblob", "vaderSentiment", "tqdm", "statsmodels"}
# Function-level imports that keep nothing heavy lazy, and why each stays.  The count may only fall.
OTHER_FUNCTION_IMPORTS = 12


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


MODULES = _modules()


def room(module: str) -> str:
    parts = module.split(".")
    return "nlgbias" if len(parts) == 1 else parts[1]


def _imports(module: str, path: Path) -> list[tuple[str, bool, int]]:
    """``(imported module, inside a function, line)`` for every import of ``module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    in_function = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in in_function, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # "from nlgbias.metrics import labor" imports the module nlgbias.metrics.labor
                full = f"{target}.{alias.name}"
                found.append((full if full in MODULES else target, id(node) in in_function, node.lineno))
    return found


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def _arrows() -> dict[str, dict[str, list[str]]]:
    """room -> room it imports -> where (``module:line``), over module- and function-level imports."""
    arrows: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module, found in IMPORTS.items():
        for target, _, line in found:
            if target.split(".")[0] == "nlgbias" and room(target) != room(module):
                arrows[room(module)][room(target)].append(f"{module}:{line}")
    return arrows


def _cycles(arrows) -> list[list[str]]:
    """The strongly connected components with more than one room (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in arrows.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted({room(m) for m in MODULES}):
        if v not in index:
            visit(v)
    return found


def _loads(target: str) -> list[str]:
    """The nlgbias modules that importing ``target`` runs: its packages' ``__init__`` first, then itself."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in MODULES]


def _heavy_modules() -> set[str]:
    """nlgbias modules that import a :data:`HEAVY` package at module level, directly or through one another."""
    heavy = {m for m, found in IMPORTS.items() if any(not f and t.split(".")[0] in HEAVY for t, f, _ in found)}
    while True:
        more = {m for m, found in IMPORTS.items()
                if m not in heavy and any(not f and set(_loads(t)[1:]) & heavy for t, f, _ in found)}
        if not more:
            return heavy
        heavy |= more


def test_every_room_has_a_layer():
    rooms = {room(m) for m in MODULES}
    assert rooms - set(LAYER) == set(), "add the new room to LAYERS in tests/test_layers.py"


def test_no_import_cycles_between_rooms():
    assert _cycles(_arrows()) == []


def test_no_room_imports_a_layer_above_it():
    upward = [f"{source} -> {target} ({', '.join(where)})" for source, targets in _arrows().items()
              for target, where in targets.items() if LAYER.get(target, -1) > LAYER.get(source, -1)]
    assert upward == []


def test_imports_inside_functions_keep_heavy_dependencies_lazy():
    heavy = _heavy_modules()
    other = [f"{module}:{line} imports {target}" for module, found in IMPORTS.items()
             for target, inside, line in found
             if inside and target.split(".")[0] not in HEAVY and not set(_loads(target)[1:]) & heavy]
    assert len(other) <= OTHER_FUNCTION_IMPORTS, "\n".join(sorted(other))


def test_the_counter_sees_what_python_sees():
    """The parser's view matches the interpreter's: every nlgbias module it finds imports, and a room's
    import of another shows up as an arrow (nlgbias.pipeline.audit imports nlgbias.analyses)."""
    import importlib

    for module in MODULES:
        if module != "nlgbias.__main__":
            importlib.import_module(module)
            assert module in sys.modules
    assert "analyses" in _arrows()["pipeline"]
    assert {"torch"} <= {t.split(".")[0] for t, inside, _ in IMPORTS["nlgbias.models.hf"]}


@pytest.mark.parametrize("name", ["run", "plan", "score", "load_suite", "expand_suite", "list_suites", "report_runs",
                                  "RayOptions", "compare_regard", "NlgbiasError", "__version__"])
def test_the_public_names_stay(name):
    import nlgbias

    assert getattr(nlgbias, name) is not None

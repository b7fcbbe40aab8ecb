"""The package's shape: its rooms import only downwards, with no cycles, and import inside functions
only to keep a heavy dependency lazy; ``import nlgbias`` loads no heavy package.

Every module under ``src/nlgbias`` is parsed with ``ast``; every import is counted, at module level
and inside functions, and so is every ``"module:attr"`` string of a ``Registry(...)`` definition
(:class:`nlgbias.registry.Registry` imports it the first time the name is looked up: an import at
run time).  A *room* is a subpackage (``nlgbias.metrics``) or a module at the package root
(``nlgbias.errors``); the package root's ``__init__`` and the command line are rooms of their own.
Each room sits on one layer of :data:`LAYERS`, listed from the bottom up.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
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
    ("foundation", {"errors", "keys", "words", "text", "sampling", "progress", "inputs", "resources", "validate", "defaults",
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
# Function-level imports that keep nothing heavy lazy.  The count may only fall, and is the true count:
# the test fails when there are more (move the new one to module level) and when there are fewer (lower
# it).  Those left: pandas in inputs.py (kept light), a cycle (suites.loader -> suites.holistic_bias),
# scorers -> scorers.regard (twice), concurrent.futures in scorers.regard, huggingface_hub in batching.
OTHER_FUNCTION_IMPORTS = 6

# Arrows that point up a layer, allowed for now: (room, room above it) -> how many places (import lines
# or registry strings) make it.  Each count may only fall and is the true count, as above.
ALLOWED_UPWARD: dict[tuple[str, str], int] = {
    # nlgbias.analyses.base.REGISTRY names three built-in analyses that live with their probes
    # ("nlgbias.probes.pronouns.analysis:PRONOUNS", "nlgbias.probes.holistic_bias.regard:HOLISTICBIAS_REGARD",
    # "nlgbias.probes.holistic_bias.likelihood_stats:HOLISTICBIAS_LIKELIHOOD"): looking one up imports
    # nlgbias.probes from nlgbias.analyses.  The probes import nlgbias.analyses.base, so this arrow also
    # closes the one cycle between rooms.  It goes when the probes register their own analyses.
    ("analyses", "probes"): 3,
}

# What `import nlgbias` must not load: a model stack, an ONNX runtime, statsmodels (seconds to import).
NOT_ON_IMPORT = ("torch", "transformers", "onnxruntime", "statsmodels")


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


def _is_registry(call: ast.Call) -> bool:
    """Whether ``call`` constructs a registry: ``Registry(...)`` or ``something.Registry(...)``."""
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "Registry") or (
        isinstance(func, ast.Attribute) and func.attr == "Registry")


def _registry_refs(path: Path) -> list[tuple[str, str, int]]:
    """``(registry variable, "module:attr" string, line)`` for every string entry of every
    ``NAME = Registry(kind, group, {name: "module:attr", ...})`` definition in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, ast.Call) and _is_registry(value)):
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        name = target.id if isinstance(target, ast.Name) else ast.unparse(target)
        entries = value.args[2] if len(value.args) > 2 else next(
            (k.value for k in value.keywords if k.arg == "entries"), None)
        if isinstance(entries, ast.Dict):
            found += [(name, v.value, v.lineno) for v in entries.values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str) and ":" in v.value]
    return found


REGISTRY_REFS = {module: _registry_refs(path) for module, path in MODULES.items()}


def _arrows(allowed: dict[tuple[str, str], int] | None = None) -> dict[str, dict[str, list[str]]]:
    """room -> room it imports -> where (``module:line``, or ``module:line registry`` for a registry
    string), over module- and function-level imports and registry strings; less the ``allowed`` arrows."""
    arrows: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module in MODULES:
        found = [(target, f"{module}:{line}") for target, _, line in IMPORTS[module]]
        found += [(ref.partition(":")[0], f"{module}:{line} registry") for _, ref, line in REGISTRY_REFS[module]]
        for target, where in found:
            if (target.split(".")[0] == "nlgbias" and room(target) != room(module)
                    and (room(module), room(target)) not in (allowed or {})):
                arrows[room(module)][room(target)].append(where)
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
    """No cycle but the ones the allowed upward arrows close."""
    assert _cycles(_arrows(ALLOWED_UPWARD)) == []


def test_no_room_imports_a_layer_above_it():
    upward = [f"{source} -> {target} ({', '.join(where)})" for source, targets in _arrows(ALLOWED_UPWARD).items()
              for target, where in targets.items() if LAYER.get(target, -1) > LAYER.get(source, -1)]
    assert upward == []


@pytest.mark.parametrize("arrow", sorted(ALLOWED_UPWARD), ids=" -> ".join)
def test_an_allowed_upward_arrow_only_shrinks(arrow):
    source, target = arrow
    assert LAYER[target] > LAYER[source], f"{source} -> {target} points down: take it out of ALLOWED_UPWARD"
    where = _arrows()[source][target]
    assert len(where) <= ALLOWED_UPWARD[arrow], "a new upward arrow:\n" + "\n".join(where)
    assert len(where) == ALLOWED_UPWARD[arrow], f"down to {len(where)}: lower ALLOWED_UPWARD[{arrow}]"


def test_imports_inside_functions_keep_heavy_dependencies_lazy():
    heavy = _heavy_modules()
    other = [f"{module}:{line} imports {target}" for module, found in IMPORTS.items()
             for target, inside, line in found
             if inside and target.split(".")[0] not in HEAVY and not set(_loads(target)[1:]) & heavy]
    assert len(other) <= OTHER_FUNCTION_IMPORTS, "move it to module level:\n" + "\n".join(sorted(other))
    assert len(other) == OTHER_FUNCTION_IMPORTS, f"down to {len(other)}: lower OTHER_FUNCTION_IMPORTS"


def _python(code: str) -> list:
    """What ``code`` prints as JSON, run by a fresh interpreter on this tree's ``src``."""
    paths = [str(SRC.parent), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_importing_nlgbias_loads_no_heavy_package():
    """``import nlgbias`` in a fresh interpreter leaves :data:`NOT_ON_IMPORT` out of ``sys.modules``;
    importing a module that needs one (nlgbias.metrics.regression: statsmodels) then shows it there."""
    where, on_import, after = _python(
        "import json, sys\n"
        f"heavy = {NOT_ON_IMPORT!r}\n"
        "loaded = lambda: sorted({m.split('.')[0] for m in sys.modules} & set(heavy))\n"
        "import nlgbias\n"
        "first = loaded()\n"
        "import nlgbias.metrics.regression\n"
        "print(json.dumps([nlgbias.__file__, first, loaded()]))\n")
    assert Path(where) == SRC / "__init__.py"
    assert on_import == []
    assert "statsmodels" in after


def test_registry_strings_are_what_the_registries_hold():
    """The parser finds the ``"module:attr"`` strings the interpreter's registries hold, each names a
    module of the package, and registry strings give arrows (analyses -> probes, pipeline -> probes)."""
    parsed = {(module, name): sorted(ref for n, ref, _ in refs if n == name)
              for module, refs in REGISTRY_REFS.items() for name in {n for n, _, _ in refs}}
    assert {m for m, _ in parsed} >= {"nlgbias.scorers", "nlgbias.analyses.base", "nlgbias.models.registry",
                                      "nlgbias.pipeline.measurements"}
    held = _python(
        "import importlib, json\n"
        f"where = {sorted(parsed)!r}\n"
        "registries = [getattr(importlib.import_module(m), name) for m, name in where]\n"
        "print(json.dumps([sorted(r for r in map(reg.ref, reg.names()) if isinstance(r, str)\n"
        "                         and r.startswith('nlgbias.')) for reg in registries]))\n")
    assert held == [parsed[key] for key in sorted(parsed)]
    assert all(ref.partition(":")[0] in MODULES for refs in parsed.values() for ref in refs)
    arrows = _arrows()
    assert any(w.endswith("registry") for w in arrows["analyses"]["probes"])
    assert any(w.endswith("registry") for w in arrows["pipeline"]["probes"])


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

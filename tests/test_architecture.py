"""The shape of genprob's imports: no cycles, and the library never imports the applications.

Every module under ``genprob/`` is parsed with ``ast``; imports inside functions count like
top-level ones (deferring an import hides a cycle, it does not remove it).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "genprob"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """genprob modules that ``name`` imports anywhere in its source (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from genprob import em` imports the module genprob.engine.em; `from genprob.core
            # import model` imports genprob.core
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # the deepest genprob module the import names (a.b.c -> a.b.c, else a.b, ...)
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imported(name, path, known) for name, path in modules.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of size > 1."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _edges_within(graph, component):
    return {(a, b) for a in component for b in graph[a] & component}


def _cycle_edges(graph, component):
    return sorted(f"{a} -> {b}" for a, b in _edges_within(graph, component))


def test_graph_sees_function_level_and_relative_imports():
    """The walker finds imports inside functions, and resolves the module a name refers to."""
    graph = _graph()
    assert "genprob.core" in graph["genprob.estimators._base"]
    # `from genprob import core, execution`
    assert "genprob.engine.execution" in graph["genprob.estimators._base"]
    assert "genprob.app.registry" in graph["genprob.app.cli"]  # imported inside functions
    assert "genprob" not in graph["genprob.core"]
    # a made-up two-module cycle is found
    assert _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    graph = _graph()
    cycles = [_cycle_edges(graph, component) for component in _strongly_connected(graph)]
    assert cycles == []


def test_layers():
    """Draw evaluation needs only the core; persistence needs no estimators; exact posteriors
    and the ArviZ bridge do not import each other."""
    graph = _graph()
    assert not any(m.startswith("genprob.estimators") for m in graph["genprob.io.persistence"])
    assert "genprob.io.arviz_io" not in graph["genprob.inference.posterior"]
    assert "genprob.inference.posterior" not in graph["genprob.io.arviz_io"]
    # execution: the one padding rule, so that draws at a new row count compile nothing
    core = {
        "genprob.core",
        "genprob.engine.execution",
        "genprob.story",
        "genprob.engine._validation",
    }
    assert graph["genprob.inference.draws"] <= core


def test_library_does_not_import_the_applications():
    graph = _graph()
    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        # ``python -m genprob`` is the command line's entry point, not library code
        if not name.startswith("genprob.app") and name != "genprob.__main__"
        for target in targets
        if target == "genprob.app" or target.startswith("genprob.app.")
    )
    assert offenders == []
    assert {"genprob.app.cli", "genprob.app.registry"} <= set(graph)


# -- family knowledge stays in genprob/families/ ---------------------------------------------------
#: The built-in families' names (Story.name of the classes in genprob/families/).
FAMILY_NAMES = frozenset({"gaussian", "bernoulli", "categorical", "multinomial", "poisson"})
FAMILIES_DIR = PACKAGE_DIR / "families"


def _family_literal(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value.lower() in FAMILY_NAMES:
            return node.value
    return None


def _literals(node) -> list[str]:
    """Family names among a literal or a tuple/list/set of literals."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [name for name in map(_family_literal, items) if name]


def _family_keys(tree) -> list[tuple[int, str, str]]:
    """``(line, how, name)`` for every place a built-in family's name is used as a key.

    Flagged: comparisons (``family == "categorical"``, ``x in ("gaussian", ...)``), dict keys,
    subscripts (``stats["categorical"]``), lookups by key (``.get("multinomial")``,
    ``.pop``, ``.setdefault``) and tables of family names only. Not flagged: docstrings,
    messages (f-strings), a family name passed as a value (``MixedNB(families={0:
    "gaussian"})``) and lists of registry story names that include some.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found += [(node.lineno, "comparison", n) for n in _literals(operand)]
        elif isinstance(node, ast.Dict):
            found += [(k.lineno, "dict key", n) for k in node.keys if k for n in _literals(k)]
        elif isinstance(node, ast.Subscript):
            found += [(node.lineno, "subscript", n) for n in _literals(node.slice)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "pop", "setdefault") and node.args:
                found += [(node.lineno, f".{node.func.attr}()", n) for n in _literals(node.args[0])]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            names = _literals(node)
            if len(names) >= 2 and len(names) == len(node.elts):  # a table of families only
                found.append((node.lineno, "table of families", ", ".join(names)))
    return sorted(set(found))


def _family_key_offenders(paths) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: {how} {name!r}"
        for path in paths
        for line, how, name in _family_keys(ast.parse(path.read_text(), filename=str(path)))
    ]


def test_family_key_scan_finds_keys_but_not_prose():
    source = '''
def f(family, stats, blocks):
    """Encode "categorical" columns; see the gaussian family."""
    if family == "categorical":
        pass
    if family in ("poisson", "bernoulli"):
        pass
    x = {"multinomial": 1}
    y = stats["emission"]["gaussian"]
    z = blocks.get("categorical")
    FAMILIES = ("gaussian", "poisson")
    stories = ("lda", "bernoulli", "poisson")
    raise ValueError(f"unknown family {family!r}: expected 'gaussian' or 'categorical'")
    return MixedNB(families={0: "gaussian"})
'''
    found = {(how, name) for _, how, name in _family_keys(ast.parse(source))}
    assert found == {
        ("comparison", "categorical"),
        ("comparison", "poisson"),
        ("comparison", "bernoulli"),
        ("table of families", "poisson, bernoulli"),
        ("dict key", "multinomial"),
        ("subscript", "gaussian"),
        (".get()", "categorical"),
        ("table of families", "gaussian, poisson"),
    }


def test_no_module_outside_families_keys_on_a_built_in_family():
    """Family knowledge lives on the stories (hooks), so a new family touches only families/."""
    paths = [p for p in sorted(PACKAGE_DIR.rglob("*.py")) if FAMILIES_DIR not in p.parents]
    assert _family_key_offenders(paths) == []


def test_story_contract_stays_small():
    """The story contract is what a story's author reads: every public name in ``dir(Story)``
    counts, final ones and settings included, since each is one more thing to learn and one
    more name a subclass can shadow by accident. At most 25 (issue 56): statistics hooks,
    genuine model hooks and one declaration, ``capabilities``, for everything the engine
    decides (where a pass runs, chunks, missing entries, the cross-check's verdict), which
    genprob.engine.capabilities derives or reads, rather than one name per flag."""
    from genprob.engine.capabilities import DEFAULTS
    from genprob.story import Story

    names = [name for name in dir(Story) if not name.startswith("_")]
    assert len(names) <= 25, sorted(names)
    assert "capabilities" in names and not set(DEFAULTS) & set(names)


def test_execution_seam_stays_small():
    """Where rows live and how a pass runs fits in one file a maintainer reads at once (issue
    56: at most 500 lines; _validation.py's share of that goal is checked with its change)."""
    lines = len((PACKAGE_DIR / "engine" / "execution.py").read_text().splitlines())
    assert lines <= 500, lines


# -- only public APIs of dependencies ------------------------------------------------------------


def _dotted(node) -> str | None:
    """``a.b.c`` of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


#: The one private module genprob imports: scikit-learn's parameter constraints, the protocol
#: (``_parameter_constraints``) its public ``estimator_checks.check_param_validation`` reads
ALLOWED_PRIVATE = ("sklearn.utils._param_validation",)


def _private_module(module: str) -> bool:
    """A module of JAX, SciPy, scikit-learn, NumPyro or ArviZ with a private part
    (``jax._src``, ``scipy.sparse._x``, ``sklearn.base._fit_context``), but the allowed one."""
    parts = module.split(".")
    if any(module == m or module.startswith(m + ".") for m in ALLOWED_PRIVATE):
        return False
    return parts[0] in ("jax", "scipy", "sklearn", "numpyro", "arviz") and any(
        part.startswith("_") for part in parts[1:]
    )


def _private_uses(tree) -> list[tuple[int, str]]:
    """``(line, what)`` for every import of JAX's or SciPy's internals (``import``, ``from ...
    import _name``, ``importlib.import_module("...")``, an attribute chain such as
    ``jax._src.config``) and every read of ``_max_workers``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _private_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found += [
                (node.lineno, f"{node.module}.{a.name}")
                for a in node.names
                if _private_module(f"{node.module}.{a.name}")
            ]
        elif isinstance(node, ast.Call) and _dotted(node.func) in (
            "importlib.import_module",
            "import_module",
            "__import__",
        ):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if _private_module(first.value):
                    found.append((node.lineno, first.value))
        elif isinstance(node, ast.Attribute):
            if node.attr == "_max_workers":
                found.append((node.lineno, "._max_workers"))
            elif (name := _dotted(node)) and _private_module(name) and node.attr.startswith("_"):
                found.append((node.lineno, name))
    return sorted(set(found))


def test_private_api_scan_finds_internals_but_not_public_names():
    source = """
import jax._src.config
from jax._src.xla_bridge import backends_are_initialized
from jax._src import core
from scipy.sparse import _sparsetools
import scipy.sparse._sparsetools as kernels
from scipy.linalg._decomp import eigh
import importlib
importlib.import_module("jax._src.compilation_cache")
flag = jax._src.config.enable_x64
pool._max_workers
import jax, scipy.sparse, scipy.special
from jax import export
from scipy.sparse import csc_matrix
from ._arrays import namespace
value = jax.numpy._private_name if False else scipy.sparse.csr_matrix
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted
"""
    found = [what for _, what in _private_uses(ast.parse(source))]
    assert found == [
        "jax._src.config",
        "jax._src.xla_bridge.backends_are_initialized",
        "jax._src.core",
        "scipy.sparse._sparsetools",
        "scipy.sparse._sparsetools",
        "scipy.linalg._decomp.eigh",
        "jax._src.compilation_cache",
        "jax._src",
        "._max_workers",
        "jax.numpy._private_name",
        "sklearn.base._fit_context",
    ]


def test_genprob_uses_only_public_apis_of_its_dependencies():
    """No ``jax._src``, no private module or name of SciPy, scikit-learn, NumPyro or ArviZ (but
    :data:`ALLOWED_PRIVATE`), no private attribute of a thread pool: each release may move them."""
    offenders = [
        f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: {what}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        for line, what in _private_uses(ast.parse(path.read_text(), filename=str(path)))
    ]
    assert offenders == []


# -- one family registry: the families' records are the only table of families ------------------
def _faces() -> dict[str, set[str]]:
    """Estimator face module -> the family modules (packages) whose records name it."""
    import importlib

    from genprob.families._registry import MODULES

    faces: dict[str, set[str]] = {}
    for module in MODULES:
        for estimator in importlib.import_module(module).FAMILY.estimators:
            faces.setdefault(estimator.partition(":")[0], set()).add(module)
    return faces


def _is_family_code(target: str) -> bool:
    """A module of some family (or of the families' shared helpers), not the registry."""
    return target.startswith("genprob.families.") and target != "genprob.families._registry"


def test_only_families_and_their_estimator_faces_import_family_modules():
    """Generic modules (core, boundaries, streaming, persistence, the app...) reach families
    through the registry; an estimator face imports its own family and the shared helpers."""
    graph = _graph()
    faces = _faces()
    assert {"genprob.estimators.gaussian", "genprob.estimators.discrete"} <= set(faces)
    offenders = []
    for name, targets in graph.items():
        if name == "genprob" or name == "genprob.families" or name.startswith("genprob.families."):
            continue  # the package namespace re-exports the public names
        for target in sorted(filter(_is_family_code, targets)):
            own = faces.get(name, set())
            shared = target.rpartition(".")[2].startswith("_") and bool(own)
            if not shared and not any(target == m or target.startswith(m + ".") for m in own):
                offenders.append(f"{name} -> {target}")
    assert offenders == []


def test_the_registry_is_the_one_table_of_families():
    """story_named, the mixed blocks, the command line's stories and aliases all come from the
    families' records; the app holds no family name or alias of its own."""
    from sklearn.base import ClassifierMixin

    from genprob.app import registry
    from genprob.estimators._criteria import CriteriaMixin
    from genprob.families import commands, families, story_named
    from genprob.families._registry import block_families, load

    records = families()
    assert set(records) >= FAMILY_NAMES | {"mixed"}
    for name, family in records.items():
        assert story_named(name) is family.story and family.story.name == name
        for estimator in family.estimators:
            # a genprob classifier (MixtureDiscriminantAnalysis is one without a single story)
            face = load(estimator)
            assert issubclass(face, CriteriaMixin) and issubclass(face, ClassifierMixin)
    assert set(block_families()) == FAMILY_NAMES  # a mixed table does not nest
    assert list(registry.STORIES) == list(commands())
    assert registry.ALIASES == {a: c.name for c in commands().values() for a in c.aliases}
    taken = set(records) | set(registry.ALIASES)
    offenders = [
        f"{path.relative_to(PACKAGE_DIR.parent)}:{node.lineno}: {node.value!r}"
        for path in sorted((PACKAGE_DIR / "app").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.Constant) and node.value in taken
    ]
    assert offenders == []


#: Modules that carry no statistics: row placement helpers, memory mappings, lazy imports (and,
#: should they come back, the native kernel, threads and program caches issue 43 deleted).
INFRASTRUCTURE = ("_arrays", "_native", "_programs", "_compile_cache", "_threads", "_mappings")
INFRASTRUCTURE += ("_lazy",)


def test_infrastructure_stays_small():
    paths = [p for p in PACKAGE_DIR.rglob("*.py") if p.stem in INFRASTRUCTURE]
    lines = {path.name: len(path.read_text().splitlines()) for path in paths if path.exists()}
    assert sum(lines.values()) <= 500, lines


# -- chunked fits drive estimators through public names only --------------------------------------

_CHUNK_DRIVERS = ("streaming.py", "distributed.py")
_ATTRIBUTE_BUILTINS = ("getattr", "hasattr", "setattr", "delattr")


def _private(name: str) -> bool:
    """``_name`` or ``__dict__`` (dunders such as ``__name__`` are the language's, not private)."""
    return name == "__dict__" or (name.startswith("_") and not name.endswith("__"))


def _foreign_private_accesses(tree) -> list[tuple[int, str]]:
    """``(line, expression)`` for every read or write of a private attribute of an object that
    is not the module's own (``self``/``cls`` in its classes): ``estimator._x``,
    ``other_module._f``, ``x.__dict__``, and ``getattr(x, "_x")`` and its siblings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not own:
                found.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ATTRIBUTE_BUILTINS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(set(found))


def test_private_access_scan_finds_foreign_privates_but_not_own_or_public_names():
    source = """
estimator._check_X(X)
codes = streaming._chunk_weights(w, n)
estimator.__dict__.pop("params_", None)
reason = getattr(estimator, "_pending_reason", "")
local._dtype = "float64"
self._chunks = chunks
name = type(X).__module__ + type(story).__name__
estimator.chunk_statistics(X, y)
getattr(estimator, "story", None)
"""
    found = [what for _, what in _foreign_private_accesses(ast.parse(source))]
    assert found == [
        "estimator._check_X",
        "streaming._chunk_weights",
        "estimator.__dict__",
        "getattr(estimator, '_pending_reason', '')",
        "local._dtype",
    ]


def test_chunked_fits_use_only_public_names_of_estimators_and_modules():
    """``streaming`` and ``distributed`` drive an estimator through its public chunk interface
    (``partial_fit``, ``chunk_statistics``, ``parameters_from_statistics``, ``fit_statistics``)
    and public functions of other modules, never their private attributes."""
    offenders = {}
    for name in _CHUNK_DRIVERS:
        path = PACKAGE_DIR / "engine" / name
        found = _foreign_private_accesses(ast.parse(path.read_text(), filename=str(path)))
        if found:
            offenders[name] = found
    assert offenders == {}


def test_no_module_reads_a_private_name_of_story():
    """Modules use the story contract's public names (``nested_stories`` is a function of
    genprob.story, not a hook); Story's private machinery stays in genprob/story.py."""
    from genprob.story import Story, nested_stories

    private = {name for name in vars(Story) if _private(name)}
    offenders = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.name == "story.py":
            continue
        found = _foreign_private_accesses(ast.parse(path.read_text(), filename=str(path)))
        offenders += [
            (path.name, line, what) for line, what in found if what.rsplit(".", 1)[-1] in private
        ]
    assert offenders == []
    assert callable(nested_stories) and not hasattr(Story, "nested_stories")


def test_one_row_check_per_public_entry():
    """Rows reach scikit-learn's ``validate_data`` through one function
    (``genprob.engine._validation.check_rows``; LDA's covariance estimators too), and the checks of
    user input stay within 500 lines a module (issue 56)."""
    callers = sorted(
        name
        for name, path in _modules().items()
        if "validate_data(" in path.read_text() or "check_array(" in path.read_text()
    )
    assert callers == ["genprob.engine._validation"], callers
    for module in ("_validation.py", "_labels.py"):
        lines = len((PACKAGE_DIR / "engine" / module).read_text().splitlines())
        assert lines <= 500, (module, lines)


def _layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's layer in the import graph: 0 imports no genprob module, else one more than
    the highest layer it imports."""
    layer: dict[str, int] = {}

    def depth(name: str) -> int:
        if name not in layer:
            layer[name] = 1 + max((depth(other) for other in graph[name]), default=-1)
        return layer[name]

    for name in graph:
        depth(name)
    return layer


def test_following_one_fit_goes_back_up_the_layers_at_most_ten_times():
    """Following X from ``GaussianNB.fit``: calls from a genprob module into a module on a
    higher layer of the import graph (hooks and callbacks a reader must jump up for) number at
    most 10 (issue 56). A call made through a dependency (scikit-learn's wrappers, JAX's
    tracing) counts from the genprob frame below it."""
    import sys

    import genprob
    from genprob.datasets import load_iris

    layer = _layers(_graph())
    X, y = load_iris()
    genprob.GaussianNB().fit(X, y)  # compiled once: the fit below is the steady state
    up: list[tuple[str, str]] = []

    def caller_module(frame):
        while frame is not None and frame.f_globals.get("__name__") not in layer:
            frame = frame.f_back
        return None if frame is None else frame.f_globals["__name__"]

    def profile(frame, event, arg):
        callee = frame.f_globals.get("__name__")
        if event != "call" or callee not in layer:
            return
        caller = caller_module(frame.f_back)
        if caller is not None and layer[callee] > layer[caller]:
            up.append((f"{caller}", f"{callee}.{frame.f_code.co_name}"))

    sys.setprofile(profile)
    try:
        genprob.GaussianNB().fit(X, y)
    finally:
        sys.setprofile(None)
    # the estimator's hook is such a call: the count sees them
    assert ("genprob.estimators._base", "genprob.estimators.gaussian._make_story") in up, up
    assert len(up) <= 10, up


# -- the layout shows the engine (issue 56, item 7) ----------------------------------------------

#: The top level: the contract, the functional core, user-facing data and maths, and the short
#: paths of the modules users import by name (one-statement aliases).
TOP_LEVEL = {"__init__", "__main__", "_lazy", "_version", "story", "core", "boundaries", "datasets"}
TOP_LEVEL |= {"plots"}  # figures of a fitted mixture classifier (issue 58)
ALIASES = {
    "em": "engine",
    "mcmc": "inference",
    "posterior": "inference",
    "arviz_io": "io",
    "streaming": "engine",
    "persistence": "io",
}


def test_the_layout_shows_the_engine():
    top = {path.stem for path in PACKAGE_DIR.glob("*.py")}
    assert top == TOP_LEVEL | set(ALIASES)
    packages = {path.parent.name for path in PACKAGE_DIR.glob("*/__init__.py")}
    assert packages == {"app", "engine", "estimators", "families", "inference", "io"}
    for name, package in ALIASES.items():
        alias = importlib.import_module(f"genprob.{name}")
        assert alias is importlib.import_module(f"genprob.{package}.{name}")
        assert len((PACKAGE_DIR / f"{name}.py").read_text().splitlines()) <= 8

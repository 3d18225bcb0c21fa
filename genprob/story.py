"""The story contract: a generative classifier as a NumPyro program (the contract, hooks and
pytree rules are described in docs/reference/story.md)."""

from __future__ import annotations

import contextvars
import inspect
import math
import operator
import typing
import warnings
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from genprob._lazy import LazyModule, is_jax_array, jax_imported, lazy_attribute, when_jax

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
transforms = LazyModule("numpyro.distributions.transforms")

__all__ = [
    "Story",
    "class_distribution",
    "story_class",
    "qualified_name",
    "CLASS_PRIOR",
    "align_components",
    "Unsupported",
    "why_not",
    "nested_stories",
    "init_parameters",
]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(__name__, {"ClassConditional": "genprob.engine.class_conditional"})

#: Name of the class-prior parameter (a probability vector over the K classes).
CLASS_PRIOR = "class_prior"

#: Statistics may hold a Gram matrix ``squares`` as its ``rows`` and their ``root_weights``
ROWS, ROOT_WEIGHTS = "rows", "root_weights"


def keeps_rows(num_rows: int, num_features: int) -> bool:
    """Whether weighted rows are kept as rows rather than their Gram matrix: at most D / 2 rows."""
    return 2 * int(num_rows) <= int(num_features)


def gram_form(stats: dict, force: bool = False) -> dict:
    """``stats`` (nested ones alike) with their :data:`ROWS` as the Gram matrix ``squares``, once
    too many to keep (:func:`keeps_rows`) or when ``force``d."""
    if not isinstance(stats, dict):
        return stats
    if ROWS not in stats:
        return {name: gram_form(value, force) for name, value in stats.items()}
    rows = stats[ROWS]
    if not force and keeps_rows(*rows.shape):
        return stats
    dense = {k: v for k, v in stats.items() if k not in (ROWS, ROOT_WEIGHTS)}
    dense["squares"] = rows.T @ rows
    return dense


def statistics_layout(stats):
    """The nested names of statistics, rows counted as their Gram matrix (:func:`gram_form`):
    equal for statistics that add up."""
    if isinstance(stats, list | tuple):
        return tuple(statistics_layout(item) for item in stats)
    if not isinstance(stats, dict):
        return None
    names = set(stats) - {ROWS, ROOT_WEIGHTS} | ({"squares"} if ROWS in stats else set())
    return {name: statistics_layout(stats.get(name)) for name in sorted(names)}


#: Suffix of a parameter kept as the rows G of its Gram matrix G^T G (a wide LDA's covariance)
PARAMETER_ROWS = "_rows"


def as_sample_sites(params):
    """``params`` with each parameter kept as rows (``<name>_rows``, 2-D) also as ``<name>``, the
    matrix G^T G that the story's prior samples (NUTS starts, comparisons with draws)."""
    out = dict(params)
    for key, value in params.items():
        name = key[: -len(PARAMETER_ROWS)]
        if key.endswith(PARAMETER_ROWS) and name and name not in params and np.ndim(value) == 2:
            out[name] = value.T @ value
    return out


class Unsupported:
    """A falsy "no" in :attr:`Story.capabilities` whose reason goes into the error."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Unsupported({self.reason!r})"


def why_not(answer, default: str) -> str:
    """The reason a capability gave with its "no", else ``default``."""
    return answer.reason if isinstance(answer, Unsupported) else default


#: Each capability a story may declare, with its default (docs/story_hooks.md)
CAPABILITY_DEFAULTS = MappingProxyType(
    {
        "array_api": False,  # its closed form and discriminant run on NumPy rows in NumPy
        "accepts_scipy_sparse": False,  # its statistics and scores take SciPy sparse rows
        "adds_over_rows": None,  # statistics of chunks combine; None: when it has a closed form
        "supports_missing": False,  # rows are scored and fitted with their NaN entries left out
        "missing_needs_em": False,  # observed_statistics depend on the parameters: EM iterates
        "smooth_likelihood": True,  # the cross-check also judges parameters and gradients
        "exact_conjugate": True,  # conjugate_factors are exact for this instance's prior
    }
)


def check_capabilities(cls, declared=None) -> None:
    """Refuse unknown capability keys, or a capability as its own attribute (before issue 56)."""
    if declared is None:
        declared = cls.capabilities if isinstance(cls.capabilities, Mapping) else {}
    unread = sorted(set(declared) - CAPABILITY_DEFAULTS.keys())
    unread += [k for k in CAPABILITY_DEFAULTS if hasattr(cls, k)]
    if unread:
        raise TypeError(
            f"{cls.__name__} gives capabilities that genprob does not read, {unread}: a story "
            f"declares them in one mapping, capabilities = {{name: value}}, with names of "
            f"{sorted(CAPABILITY_DEFAULTS)}."
        )


#: Story classes by qualified name (module + qualname), filled as classes are defined.
_STORY_CLASSES: dict[str, type] = {}


def qualified_name(cls) -> str:
    """``module.qualname`` of a class: the key under which stories and estimators register."""
    return f"{cls.__module__}.{cls.__qualname__}"


def story_class(name: str):
    """The story class registered under qualified ``name``, or None if none is defined."""
    return _STORY_CLASSES.get(name)


class _Hole:
    """Marks where a nested story sits inside a static container attribute."""

    def __repr__(self):
        return "<story>"


_HOLE = _Hole()


class _Static:
    """Static aux data compared by value (arrays and lists included), as jit's cache needs."""

    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        self._key = _freeze(value)

    def __eq__(self, other):
        return isinstance(other, _Static) and self._key == other._key

    def __hash__(self):
        return hash(self._key)


def _is_traced_value(value) -> bool:
    """Default classification: floats and floating arrays are traced, the rest is structure."""
    if isinstance(value, float | np.floating):
        return True
    if isinstance(value, np.ndarray):
        return np.issubdtype(value.dtype, np.floating)
    return is_jax_array(value) and jnp.issubdtype(value.dtype, jnp.floating)


def _skeleton(value):
    """``value`` with every nested story replaced by a hole (containers are tuples/lists)."""
    if isinstance(value, Story):
        return _HOLE
    if type(value) in (tuple, list):
        skeleton = type(value)(_skeleton(v) for v in value)
        return skeleton if _holds_hole(skeleton) else value
    return value


def _stories_in(value, skeleton, out: list) -> list:
    """The nested stories (or their stand-in leaves) of ``value`` at the skeleton's holes."""
    if skeleton is _HOLE:
        out.append(value)
    elif type(skeleton) in (tuple, list) and _holds_hole(skeleton):
        for item, shape in zip(value, skeleton, strict=True):
            _stories_in(item, shape, out)
    return out


def _holds_hole(skeleton) -> bool:
    if skeleton is _HOLE:
        return True
    return type(skeleton) in (tuple, list) and any(_holds_hole(v) for v in skeleton)


def _fill(skeleton, children):
    """Inverse of :func:`_stories_in`: the skeleton with its holes filled from ``children``."""
    if skeleton is _HOLE:
        return next(children)
    if type(skeleton) in (tuple, list) and _holds_hole(skeleton):
        return type(skeleton)(_fill(v, children) for v in skeleton)
    return skeleton


class _StoryType(type):
    """Metaclass that seals a story once its ``__init__`` has returned."""

    def __call__(cls, *args, **kwargs):
        jax_imported()  # a user who imported JAX hands stories to it: register waiting classes
        story = super().__call__(*args, **kwargs)
        story._seal()
        return story


#: The calls of :meth:`Story.data_scales` while :meth:`Story.scaled_to_data` traces a prior.
_DATA_SCALES_CALLS: contextvars.ContextVar = contextvars.ContextVar(
    "genprob_data_scales_calls", default=None
)


class Story(metaclass=_StoryType):
    """Base class of a generative story: class prior, then class-conditional features.

    Subclasses set :attr:`name` and implement :meth:`prior` and :meth:`emission`; closed-form
    stories also :meth:`sufficient_statistics` and :meth:`maximize`. A story is an immutable JAX
    pytree (:meth:`replace` gives a changed copy; docs/reference/story.md)."""

    __slots__ = ("__dict__", "__weakref__", "_sealed", "_layout")

    #: short identifier used by the CLI and in reports
    name = "story"
    #: Dirichlet concentration of the class prior's prior (1 = uniform); a setting, not a hook
    class_concentration: typing.Final = 1.0
    #: What the engine may do with the story beyond its hooks (a mapping, or a property):
    #: keys and defaults in :data:`CAPABILITY_DEFAULTS` (docs/story_hooks.md).
    capabilities: typing.ClassVar = MappingProxyType({})

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        check_capabilities(cls)
        # the newest definition wins (a class redefined in a notebook replaces the old one)
        _STORY_CLASSES[qualified_name(cls)] = cls
        when_jax(lambda jax: _register_pytree(cls, jax))

    # -- value semantics ---------------------------------------------------------------------------
    def _seal(self) -> None:
        """Classify the attributes (traced or static) and forbid further changes."""
        layout = []
        for key, value in vars(self).items():
            if _is_traced_value(value):
                kind = _HOLE
            else:
                kind = _skeleton(value)  # static, with holes where nested stories sit
                if not _holds_hole(kind):
                    kind = None
            layout.append((key, kind))
        object.__setattr__(self, "_layout", tuple(layout))
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, key, value):
        if getattr(self, "_sealed", False):
            raise AttributeError(
                f"{type(self).__name__} is immutable: use story.replace({key}=...) for a changed "
                f"copy."
            )
        object.__setattr__(self, key, value)

    def __delattr__(self, key):
        if getattr(self, "_sealed", False):
            raise AttributeError(f"{type(self).__name__} is immutable.")
        object.__delattr__(self, key)

    def _flatten_with_keys(self):
        from jax.tree_util import GetAttrKey  # flattened by JAX: it is imported

        children, aux = [], []
        fields = vars(self)
        for key, kind in self._layout:
            value = fields[key]
            if kind is None:
                aux.append((key, _Static(value), 0))
            elif kind is _HOLE:
                children.append((GetAttrKey(key), value))
                aux.append((key, _Static(_HOLE), 1))
            else:
                nested = _stories_in(value, kind, [])
                children.extend((GetAttrKey(key), item) for item in nested)
                aux.append((key, _Static(kind), len(nested)))
        return children, tuple(aux)

    @classmethod
    def _from_fields(cls, fields: dict, layout=None):
        """A sealed story with the given attributes, bypassing ``__init__`` (no validation)."""
        story = object.__new__(cls)
        for key, value in fields.items():
            object.__setattr__(story, key, value)
        if layout is None:
            story._seal()
        else:
            object.__setattr__(story, "_layout", layout)
            object.__setattr__(story, "_sealed", True)
        return story

    @typing.final
    def fields(self) -> dict:
        """The story's attributes (its configuration) as a dict."""
        return dict(vars(self))

    @typing.final
    def replace(self, **changes) -> Story:
        """A new story with some attributes replaced: ``__init__`` parameters go through
        ``__init__`` again (validated, derived attributes recomputed), others are set on the copy.

        Raises:
            ValueError: for a name the story does not have."""
        if not changes:
            return self
        current = vars(self)
        parameters = init_parameters(type(self))
        # an __init__ setting kept as a class default until given is settable too
        settable = set(current) | {"class_concentration"} | {p.name for p in parameters or ()}
        unknown = sorted(set(changes) - settable)
        if unknown:
            known = ", ".join(sorted(settable))
            raise ValueError(
                f"{type(self).__name__} has no setting {unknown[0]!r}; known: {known}."
            )
        merged = {**current, **changes}
        if parameters is not None and all(
            p.name in merged or p.default is not inspect.Parameter.empty for p in parameters
        ):
            story = type(self)(**{p.name: merged[p.name] for p in parameters if p.name in merged})
            extra = {k: v for k, v in merged.items() if k not in vars(story) or k in changes}
            extra = {k: v for k, v in extra.items() if k not in {p.name for p in parameters}}
            if not extra:
                return story
            return type(self)._from_fields({**vars(story), **extra})
        return type(self)._from_fields(merged)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_rebuild_story, (type(self), vars(self).copy()))

    # -- required ------------------------------------------------------------------------------
    def prior(self, num_classes: int, num_features: int) -> dict:
        """Sample the emission's named parameters with ``numpyro.sample``; return them as a dict."""
        raise NotImplementedError

    def emission(self, params: dict) -> dist.Distribution:
        """Class-conditional distribution with batch shape ``(K,)`` and event shape ``(D,)``."""
        raise NotImplementedError

    def discriminant(self, params: dict, X) -> jax.Array:
        """Class scores ``log p(x_i | k) - g(x_i)`` (n, K), ``g`` a term of the row alone that
        cancels in the posteriors (docs/story_hooks.md); default: the exact log density."""
        return self.log_density(params, X)

    def log_density(self, params: dict, X):
        """``log p(x_i | k)`` (n, K), exact: the emission's ``log_prob`` (docs/story_hooks.md)."""
        return self.emission(params).log_prob(X[:, None, :])

    # -- optional closed form --------------------------------------------------------------------
    def sufficient_statistics(self, X, R) -> dict:
        """Additive statistics of data ``X`` (n, D) weighted by responsibilities ``R`` (n, K)."""
        raise NotImplementedError

    def maximize(self, stats: dict) -> dict:
        """Closed-form M-step: emission parameters maximizing the (penalized) likelihood."""
        raise NotImplementedError

    def combine_statistics(self, stats_a: dict, stats_b: dict) -> dict:
        """Statistics of the union of two data chunks: by default their leafwise sum (``ValueError``
        for statistics that do not combine)."""
        return jax.tree_util.tree_map(operator.add, stats_a, stats_b)  # NumPy or JAX alike

    def log_penalty(self, params: dict, stats: dict):
        """Log density (up to a constant) of the prior that the closed form's regularization is:
        the closed form maximizes ``log_likelihood + log_penalty`` (0 for plain MLE); ``stats``
        are the fitted data's emission statistics (some regularizers scale with class counts)."""
        return 0.0

    # -- optional hooks --------------------------------------------------------------------------
    def check_parameters(self, params: dict, class_names=None, feature_names=None) -> None:
        """Raise ``ValueError`` naming the problem when fitted parameters define no distribution
        (every closed-form and EM fit); the default requires finite floating-point parameters."""
        for name, value in params.items():
            value = np.asarray(value)
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise ValueError(
                    f"the fitted parameter {name!r} has non-finite entries: the data do not "
                    f"determine it (a class without rows, or a degenerate feature?)."
                )

    def validate(self, X):
        """Check that ``X`` lies in the emission's support; raise ``ValueError`` (or a
        ``FeatureValueError``) naming the problem. Called on concrete host values once per public
        entry (missing entries filled with 0); the default accepts any finite real matrix."""
        return X

    # -- missing feature values (NaN entries, marginalized): the capability "supports_missing"
    def observed_log_prob(self, params: dict, X, observed):
        """``log p(x_obs | k)`` (n, K) of the observed entries (``observed``: boolean (n, D);
        ``X``'s missing entries filled with a value of the support); by default the per-feature
        log densities of an ``Independent`` emission summed over observed entries."""
        emission = self.emission(params)
        if not isinstance(emission, dist.Independent) or emission.reinterpreted_batch_ndims != 1:
            raise NotImplementedError(
                f"{type(self).__name__} must override observed_log_prob: its emission is not "
                f"independent over features."
            )
        by_feature = emission.base_dist.log_prob(X[:, None, :])  # (n, K, D)
        return jnp.sum(jnp.where(observed[:, None, :], by_feature, 0.0), axis=-1)

    def observed_statistics(self, X, R, observed, params=None) -> dict:
        """Sufficient statistics counting observed entries only (input to :meth:`maximize`);
        ``params``: the current parameters for ``missing_needs_em`` stories (None at first)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no closed form with missing entries (observed_statistics)."
        )

    def num_parameters(self, num_classes: int, num_features: int) -> int:
        """Number of free parameters, class prior included (K − 1 of them); by default the
        unconstrained dimensions of every site :meth:`prior` samples."""
        with numpyro.handlers.seed(rng_seed=0), numpyro.handlers.trace() as tr:
            self.prior(num_classes, num_features)
        count = num_classes - 1
        for site in tr.values():
            if site["type"] == "sample" and not site["is_observed"]:
                shape = transforms.biject_to(site["fn"].support).inverse_shape(
                    jnp.shape(site["value"])
                )
                count += math.prod(shape)
        return int(count)

    @classmethod
    def from_data(cls, X, **options) -> Story:
        """The story for features ``X`` (n, D); families whose structure depends on the data
        (category counts, say) override it. The default ignores ``X``."""
        return cls(**options)

    def scaled_to_data(self, X) -> Story:
        """The story with weakly informative prior scales from ``X`` (NUTS, ``priors="data"``): a
        copy carrying each feature's mean and sd when its prior reads :meth:`data_scales`."""
        if not isinstance(X, np.ndarray | jax.Array):
            return self
        from numpyro import handlers

        def run():  # an abstract trace: nothing is drawn
            handlers.trace(handlers.seed(self.prior, 0)).get_trace(2, X.shape[1])
            return 0

        calls = []
        token = _DATA_SCALES_CALLS.set(calls)
        try:
            jax.eval_shape(run)
        finally:
            _DATA_SCALES_CALLS.reset(token)
        if not calls:  # the prior does not read data_scales
            return self
        location, spread = observed_scales(X)
        fields = {**vars(self), "data_location": location, "data_scale": spread}
        return type(self)._from_fields(fields)

    @typing.final
    def data_scales(self, num_features: int):
        """Each feature's ``(location, scale)``, arrays (D,): the data's means and sds under NUTS
        with ``priors="data"``, zeros and ones elsewhere (the prior reads as written)."""
        calls = _DATA_SCALES_CALLS.get()
        if calls is not None:
            calls.append(num_features)
        location = getattr(self, "data_location", None)
        if location is None:
            return jnp.zeros(num_features), jnp.ones(num_features)
        return jnp.asarray(location), jnp.asarray(self.data_scale)

    def align_parameters(self, params: dict, reference: dict) -> dict:
        """``params`` relabeled to match ``reference`` where the likelihood cannot tell them apart
        (a mixture's exchangeable components: :func:`align_components`); default: unchanged."""
        return params

    def parameter_dims(self, name: str, shape: tuple, num_classes: int, num_features: int):
        """Dimension names of parameter ``name`` of ``shape`` (None for an axis the story does not
        name); the default names K, (K, D) and (D,) axes ``"class"`` and ``"feature"``."""
        shape = tuple(shape)
        if shape == (num_classes, num_features):
            return ("class", "feature")
        if shape == (num_features,) and num_features != num_classes:
            return ("feature",)
        return tuple("class" if i == 0 and n == num_classes else None for i, n in enumerate(shape))

    def coords(self, feature_names: list) -> dict:
        """Coordinates of the story's own dimensions beyond ``class`` and ``feature``."""
        return {}

    def conjugate_factors(self, stats: dict, offset: float) -> dict:
        """Exact posterior factors of the emission parameters from fully labeled ``stats``: name
        (or tuple of names) -> :class:`~genprob.inference.conjugate.ConjugateFactor`; ``offset``
        1 for the story's own prior, 0 for the prior whose posterior mean the smoothed fit is."""
        raise NotImplementedError

    # Equal configurations compare (and hash) equal, so a story can still key a cache.
    def _identity(self):
        return (type(self), tuple(sorted((k, _freeze(v)) for k, v in vars(self).items())))

    def __eq__(self, other):
        return type(self) is type(other) and self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def nested_stories(story: Story) -> list:
    """The stories held in ``story``'s attributes (directly, or in tuples and lists)."""
    fields, nested = vars(story), []
    for key, kind in story._layout:
        if kind is _HOLE and isinstance(fields[key], Story):
            nested.append(fields[key])
        elif kind is not None and kind is not _HOLE:
            nested.extend(_stories_in(fields[key], kind, []))
    return nested


_PLAIN = (str, bool, int, type(None))


def structure_key(story: Story) -> tuple:
    """A hashable key of what decides shapes and code paths (without JAX)."""
    fields, parts = vars(story), []
    for key, kind in story._layout:
        value = fields[key]
        if kind is None:
            parts.append((key, value if type(value) in _PLAIN else _freeze(value)))
        elif kind is _HOLE:
            if type(value) is float:
                parts.append((key, float))
            elif isinstance(value, Story):
                parts.append((key, structure_key(value)))
            else:
                parts.append((key, np.shape(value), str(value.dtype)))
        else:
            nested = _stories_in(value, kind, [])
            parts.append((key, _Static(kind), tuple(map(structure_key, nested))))
    return (type(story), tuple(parts))


def init_parameters(cls):
    """The settings of story class ``cls``, its ``__init__``'s keyword parameters (what
    :meth:`Story.replace` and model files rebuild a story through), or None when it takes
    ``*args``/``**kwargs``."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) for p in parameters):
        return None
    return parameters


def _unflattener(cls):
    def unflatten(aux, children):
        children = iter(children)
        fields, layout = {}, []
        for key, static, count in aux:
            skeleton = static.value
            if skeleton is _HOLE:
                fields[key] = next(children)
                layout.append((key, _HOLE))
            elif count:
                fields[key] = _fill(skeleton, children)
                layout.append((key, skeleton))
            else:
                fields[key] = skeleton
                layout.append((key, None))
        return cls._from_fields(fields, tuple(layout))

    return unflatten


def _rebuild_story(cls, fields):
    """Unpickling helper: pickle and ``copy`` rebuild a story from its attributes."""
    return cls._from_fields(fields)


def _freeze(value):
    """Hashable view of a story attribute (lists, dicts and arrays become tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if hasattr(value, "tolist") and hasattr(value, "shape"):
        return ("array", _freeze(value.tolist()) if value.shape else value.item())
    return value


def class_distribution(class_prior) -> dist.Distribution:
    """Distribution of the class label: Bernoulli for two classes, categorical otherwise."""
    if class_prior.shape[-1] == 2:
        return dist.Bernoulli(probs=class_prior[..., 1])
    return dist.Categorical(probs=class_prior)


def _register_pytree(cls, jax) -> None:
    jax.tree_util.register_pytree_with_keys(cls, Story._flatten_with_keys, _unflattener(cls))


when_jax(lambda jax: _register_pytree(Story, jax))


def align_components(params: dict, reference: dict, names, axis: int = 1) -> dict:
    """Permute the components (axis ``axis``) of ``params[names]`` to best match ``reference``:
    per class (axis 0), the exact minimizer of the summed squared distance."""
    from scipy.optimize import linear_sum_assignment

    names = list(names)
    moved = {n: np.moveaxis(np.asarray(params[n], dtype=np.float64), axis, 1) for n in names}
    target = {n: np.moveaxis(np.asarray(reference[n], dtype=np.float64), axis, 1) for n in names}
    aligned = {n: moved[n].copy() for n in names}
    for k in range(moved[names[0]].shape[0]):
        cost = 0.0
        for n in names:
            a = target[n][k].reshape(target[n].shape[1], -1)
            b = moved[n][k].reshape(moved[n].shape[1], -1)
            cost = cost + ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        rows, cols = linear_sum_assignment(cost)
        for n in names:
            aligned[n][k, rows] = moved[n][k, cols]
    out = dict(params)
    out.update({n: np.moveaxis(aligned[n], 1, axis) for n in names})
    return out


def observed_scales(X) -> tuple[np.ndarray, np.ndarray]:
    """Each column's mean and sd over its observed cells: the data scale of default priors (an
    all-missing or constant column: location 0 or its value, spread 1)."""
    values = np.asarray(X, dtype=np.float64)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: 0 and 1
        location = np.nan_to_num(np.nanmean(values, axis=0))
        spread = np.nanstd(values, axis=0)
    return location, np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)

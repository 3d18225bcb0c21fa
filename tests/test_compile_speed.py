"""Speed without changed results: bucketed row counts, and no compilation cache of genprob's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, cross_val_score
from test_story_value import (  # noqa: F401 - the compile-counting fixture
    _assert_counter_sees_compilations,
    compilations,
)

import genprob
from genprob.engine import execution
from genprob.engine.execution import padded_rows


def _counts(num_rows=137, num_features=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, num_rows)
    X = rng.poisson(1.0 + y[:, None] * np.arange(1, num_features + 1) / 3.0).astype(float)
    return X, y


def _estimators():
    X_iris, y_iris = load_iris(return_X_y=True)
    X_counts, y_counts = _counts()
    binary = (X_counts > 1).astype(float)
    return [
        (genprob.GaussianNB(), X_iris, y_iris),
        (genprob.LinearDiscriminantAnalysis(), X_iris, y_iris),
        (genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.3), X_iris, y_iris),
        (genprob.QuadraticDiscriminantAnalysis(reg_param=0.1), X_iris, y_iris),
        (genprob.MultinomialNB(alpha=0.5), X_counts, y_counts),
        (genprob.BernoulliNB(), binary, y_counts),
        (genprob.CategoricalNB(), np.minimum(X_counts, 4), y_counts),
        (genprob.PoissonNB(), X_counts, y_counts),
    ]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", range(8))
def test_padded_fit_equals_unpadded_fit(monkeypatch, case, weighted):
    estimator, X, y = _estimators()[case]
    # rows not in class order and a count off the buckets, so padding and grouping both happen
    rows = np.random.default_rng(case).permutation(len(y))[:131]
    X, y = X[rows], y[rows]
    assert padded_rows(len(y)) > len(y)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    padded = estimator.__class__(**estimator.get_params()).fit(X, y, sample_weight=weight)
    monkeypatch.setattr(execution, "PAD_LIMIT", 0)
    plain = estimator.__class__(**estimator.get_params()).fit(X, y, sample_weight=weight)
    assert padded.params_.keys() == plain.params_.keys()
    for name, value in plain.params_.items():
        np.testing.assert_allclose(padded.params_[name], value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        padded.stats_["class_counts"], plain.stats_["class_counts"], rtol=0, atol=1e-12
    )
    # scoring pads too: each real row's score is the same as unpadded
    np.testing.assert_allclose(
        padded.predict_log_proba(X), plain.predict_log_proba(X), rtol=1e-12, atol=1e-12
    )
    monkeypatch.undo()
    np.testing.assert_allclose(
        padded.predict_joint_log_proba(X[:7]),
        plain.predict_joint_log_proba(X)[:7],
        rtol=1e-12,
        atol=1e-12,
    )


def test_padding_rows_never_reach_the_class_counts():
    X, y = load_iris(return_X_y=True)
    fitted = genprob.GaussianNB().fit(X[:101], y[:101])
    np.testing.assert_array_equal(fitted.class_count_, np.bincount(y[:101], minlength=3))
    assert fitted.predict_proba(X[:3]).shape == (3, 3)


@pytest.mark.parametrize(
    ("estimator", "name", "values"),
    [
        (genprob.GaussianNB, "var_smoothing", [1e-9, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2]),
        (genprob.QuadraticDiscriminantAnalysis, "reg_param", [0.0, 0.1, 0.2, 0.3, 0.5, 0.9]),
        (genprob.MultinomialNB, "alpha", [0.1, 0.2, 0.5, 1.0, 2.0, 3.0]),
    ],
)
def test_cross_validation_and_sweep_compile_only_the_first_fit(
    compilations,  # noqa: F811
    estimator,
    name,
    values,
):
    """3 folds of unequal sizes x 6 values: only the very first fit and score compile."""
    if estimator is genprob.MultinomialNB:
        X, y = _counts(num_rows=157, seed=3)
    else:
        X, y = load_iris(return_X_y=True)
        X, y = np.vstack([X, X[:7] + 0.01]), np.concatenate([y, y[:7]])  # 157 rows
    folds = KFold(3, shuffle=True, random_state=0)
    sizes = {len(train) for train, _ in folds.split(X)}
    assert len(sizes) > 1  # unequal folds: without buckets each would compile
    counts = []
    for value in values:
        compilations.count = 0
        scores = cross_val_score(estimator(**{name: value}), X, y, cv=folds)
        counts.append(compilations.count)
        assert np.all(scores > 0.3)
    assert counts[1:] == [0] * (len(values) - 1)
    _assert_counter_sees_compilations(compilations)
    # fold by fold, with every prediction method: after the first fold nothing compiles
    per_fold = []
    for train, test in folds.split(X):
        compilations.count = 0
        fitted = estimator(**{name: values[-1]}).fit(X[train], y[train])
        fitted.predict_proba(X[test]), fitted.predict(X[test]), fitted.predict_log_proba(X[test])
        per_fold.append(compilations.count)
    assert per_fold[1:] == [0, 0]


def test_multinomial_folds_of_other_document_lengths_compile_nothing_new(
    compilations,  # noqa: F811
):
    """Each fold's story samples documents of its own mean length (a static setting); compiled
    fits and predictions take the story without it, so no fold after the first compiles."""
    X, y = _counts(num_rows=157, seed=3)
    X = X * (1 + np.arange(157) % 9)[:, None]  # rows of very different lengths
    lengths, per_fold = set(), []
    for train, test in KFold(3, shuffle=True, random_state=0).split(X):
        compilations.count = 0
        fitted = genprob.MultinomialNB(alpha=0.5).fit(X[train], y[train])
        fitted.predict_proba(X[test]), fitted.predict(X[test])
        per_fold.append(compilations.count)
        lengths.add(fitted.story_.total_count)
    assert len(lengths) == 3  # three static settings, one compilation
    assert per_fold[1:] == [0, 0]
    _assert_counter_sees_compilations(compilations)
    # sampling still reads the fitted document length
    draws, _ = fitted.sample(5, random_state=0)
    assert np.all(np.asarray(draws).sum(axis=1) == fitted.story_.total_count)


def _partly_labeled_iris(num_rows=None):
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(4).permutation(len(y))
    X, y = X[order], np.where(np.arange(len(y)) % 5 == 0, y[order], -1)
    return (X, y) if num_rows is None else (X[:num_rows], y[:num_rows])


@pytest.mark.parametrize(
    ("estimator", "options"),
    [
        (genprob.QuadraticDiscriminantAnalysis(reg_param=0.1), {}),
        (genprob.GaussianNB(), {"sample_weight": True}),
        (genprob.LinearDiscriminantAnalysis(n_init=3), {}),
        (genprob.MultinomialNB(alpha=0.5), {"counts": True}),
    ],
    ids=["qda", "gaussian_nb weighted", "lda n_init=3", "multinomial_nb"],
)
def test_padded_em_equals_unpadded_em(monkeypatch, estimator, options):
    """EM pads rows (unlabeled, weight 0) to a bucket size: the fit is the unpadded one.

    Both run 25 M-steps (em_tol=0): EM converges linearly, so a stop decided one iteration
    apart by rounding would move the parameters by ~1e-7 whatever the padding."""
    estimator = estimator.set_params(em_tol=0.0, max_iter=25)
    if options.get("counts"):
        X, y = _counts(num_rows=131, seed=5)
        y = np.where(np.arange(len(y)) % 4 == 0, y, -1)
    else:
        X, y = _partly_labeled_iris(131)
    assert padded_rows(len(y)) > len(y)
    weight = (
        np.random.default_rng(2).uniform(0.5, 2.0, len(y)) if options.get("sample_weight") else None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed number of M-steps
        padded = estimator.__class__(**estimator.get_params()).fit(X, y, sample_weight=weight)
        monkeypatch.setattr(execution, "PAD_LIMIT", 0)
        plain = estimator.__class__(**estimator.get_params()).fit(X, y, sample_weight=weight)
    assert padded.n_iter_ == plain.n_iter_ == 25
    for name, value in plain.params_.items():
        np.testing.assert_allclose(padded.params_[name], value, rtol=1e-12, atol=1e-12)
    for name in ("label_distributions_", "log_likelihood_trace_"):
        np.testing.assert_allclose(
            getattr(padded, name), getattr(plain, name), rtol=1e-12, atol=1e-12
        )
    assert padded.label_distributions_.shape == (len(y), len(padded.classes_))
    np.testing.assert_allclose(
        padded.stats_["class_counts"], plain.stats_["class_counts"], rtol=0, atol=1e-10
    )


def test_fit_em_pads_without_changing_random_starts(monkeypatch):
    """The functional core's EM: random initial responsibilities are drawn for the real rows,
    so n_init random starts give the same runs padded and unpadded."""
    import jax

    X, y = _partly_labeled_iris(101)
    story = genprob.GaussianStory(covariance="diag", shared=False)
    with jax.enable_x64(True):
        padded = genprob.fit_em(story, X, y, num_classes=3, n_init=3, init="random", seed=3)
        monkeypatch.setattr(execution, "PAD_LIMIT", 0)
        plain = genprob.fit_em(story, X, y, num_classes=3, n_init=3, init="random", seed=3)
    np.testing.assert_allclose(padded.init_log_likelihoods, plain.init_log_likelihoods, rtol=1e-12)
    np.testing.assert_allclose(padded.responsibilities, plain.responsibilities, atol=1e-12)
    assert padded.responsibilities.shape == (101, 3)


@pytest.mark.parametrize(
    "estimator",
    [genprob.QuadraticDiscriminantAnalysis(reg_param=0.1), genprob.GaussianNB()],
    ids=["qda", "gaussian_nb"],
)
def test_semi_supervised_cross_validation_compiles_only_the_first_fold(
    compilations,  # noqa: F811
    estimator,
):
    """EM on folds of unequal sizes: after the first fold, fitting and predicting compile
    nothing (EM used to compile its whole program for every row count)."""
    X, y = _partly_labeled_iris(146)
    folds = KFold(3, shuffle=True, random_state=1)
    assert len({len(train) for train, _ in folds.split(X)}) > 1
    per_fold = []
    for train, test in folds.split(X):
        compilations.count = 0
        fitted = estimator.__class__(**estimator.get_params()).fit(X[train], y[train])
        fitted.predict_proba(X[test])
        per_fold.append(compilations.count)
        assert hasattr(fitted, "n_iter_")  # the EM path
    assert per_fold[1:] == [0, 0]
    _assert_counter_sees_compilations(compilations)


_EM_FIT = textwrap.dedent(
    """
    import json
    import jax
    import numpy as np
    from sklearn.datasets import load_iris
    import genprob

    _EM_ESTIMATORS = ("PoissonNB", "CategoricalNB")
    X, y = load_iris(return_X_y=True)
    # every third label: compiled EM programs (stories whose closed form is not written in the
    # array namespace; the others run EM in NumPy)
    partial = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    counts = np.round(2.0 * X)
    out = {}
    for name in _EM_ESTIMATORS:
        proba = getattr(genprob, name)().fit(counts, partial).predict_proba(counts)
        out[name] = [float(v).hex() for v in proba.ravel()]
    # the process's JAX configuration is as the user left it
    out["cache dir"] = jax.config.jax_compilation_cache_dir
    out["min time"] = jax.config.jax_persistent_cache_min_compile_time_secs
    print(json.dumps(out))
    """
)


def _run(home, **jax_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENPROB_", "JAX_"))}
    env.update(XDG_CACHE_HOME=str(home), HOME=str(home), JAX_PLATFORMS="cpu", **jax_env)
    done = subprocess.run(
        [sys.executable, "-c", _EM_FIT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _files(path):
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def test_a_damaged_old_cache_is_never_read_and_nothing_is_written(tmp_path):
    """genprob keeps no cache of its own: entries of the cache it used to keep, damaged, change
    nothing, EM fits run, and the process's JAX configuration stays JAX's default."""
    home = tmp_path / "home"
    traces = home / "genprob" / "jax" / "traces"
    traces.mkdir(parents=True)
    (traces / "_em_runs-0123.jaxexport").write_bytes(b"\x00not a StableHLO module" * 8)
    (traces.parent / "jit__em_runs-0123-cache").write_bytes(b"\xff" * 64)
    before = {p: p.read_bytes() for p in _files(home)}
    clean = _run(tmp_path / "clean")
    damaged = _run(home)
    assert {p: p.read_bytes() for p in _files(home)} == before
    assert _files(tmp_path / "clean") == []
    for result in (clean, damaged):
        assert result["cache dir"] is None
        assert result["min time"] == 1.0
    for name in ("PoissonNB", "CategoricalNB"):
        assert clean[name] == damaged[name]  # bitwise


def test_jax_own_cache_as_the_docs_enable_it_gives_identical_results(tmp_path):
    """The recipe of the docs (JAX's environment variables) keeps genprob's programs on disk;
    a warm process reads them and returns the same bits."""
    cache = tmp_path / "jax-cache"
    jax_env = {
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }
    off = _run(tmp_path / "home-off")
    cold = _run(tmp_path / "home", **jax_env)
    written = _files(cache)
    assert len(written) >= 2  # at least each estimator's EM program was kept
    warm = _run(tmp_path / "home", **jax_env)
    assert warm["cache dir"] == str(cache)
    for name in ("PoissonNB", "CategoricalNB"):
        assert off[name] == cold[name] == warm[name]  # bitwise


_CLI_PROCESS = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    from genprob.app import cli
    cli._keep_compiled_programs()
    print(jax.config.jax_compilation_cache_dir)
    print(repr(float(jax.jit(lambda x: jnp.sin(x) * 3.0)(0.5))))
    """
)


def _cli_process(home, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    environment.update(XDG_CACHE_HOME=str(home), **env)
    done = subprocess.run(
        [sys.executable, "-c", _CLI_PROCESS], env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_command_line_keeps_compiled_programs_and_survives_damaged_entries(tmp_path):
    directory = tmp_path / "genprob" / "jax"
    first = _cli_process(tmp_path)
    assert first[0] == str(directory)
    entries = [p for p in directory.iterdir() if p.is_file() and "lock" not in p.name]
    assert entries
    for entry in entries:
        entry.write_bytes(b"damaged")
    again = _cli_process(tmp_path)
    assert again == first  # the damaged entries are compiled again, the result is the same
    assert not directory.exists()  # and dropped at exit, so that the next process refills it
    assert _cli_process(tmp_path) == first
    assert any(p.is_file() for p in directory.iterdir())


def test_the_command_line_cache_can_be_switched_off_and_leaves_a_user_cache(tmp_path):
    assert _cli_process(tmp_path, GENPROB_CLI_CACHE="0")[0] == "None"
    assert not (tmp_path / "genprob").exists()
    own = tmp_path / "mine"
    assert _cli_process(tmp_path, JAX_COMPILATION_CACHE_DIR=str(own))[0] == str(own)
    assert not (tmp_path / "genprob").exists()


class _StudentTStory(genprob.Story):
    """The README's user story: no closed form, fitted by the optimizer."""

    name = "student_t_compile_test"

    def prior(self, num_classes, num_features):
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist

        shape = [num_classes, num_features]
        loc, scale = self.data_scales(num_features)
        means = dist.Normal(loc, 10 * scale).expand(shape).to_event(2)
        scales = dist.LogNormal(jnp.log(scale), 2).expand(shape).to_event(2)
        return {
            "means": numpyro.sample("means", means),
            "scales": numpyro.sample("scales", scales),
        }

    def emission(self, params):
        import numpyro.distributions as dist

        return dist.StudentT(4.0, params["means"], params["scales"]).to_event(1)


def test_cross_validation_of_a_user_story_compiles_the_fit_once(compilations):  # noqa: F811
    """5 folds of unequal sizes and a refit on every row: one bucket of rows, so only the first
    fold compiles (the optimizer's program, the scores) and the refit compiles nothing."""
    X, y = load_iris(return_X_y=True)
    X, y = X[:147], y[:147]
    folds = list(KFold(5, shuffle=True, random_state=0).split(X))
    assert len({len(train) for train, _ in folds}) > 1
    per_fold = []
    for train, test in folds:
        compilations.count = 0
        fitted = genprob.GenerativeClassifier(_StudentTStory()).fit(X[train], y[train])
        assert fitted.score(X[test], y[test]) > 0.8
        per_fold.append(compilations.count)
    assert per_fold[0] > 0 and per_fold[1:] == [0] * 4
    compilations.count = 0
    scores = cross_val_score(genprob.GenerativeClassifier(_StudentTStory()), X, y, cv=folds)
    genprob.GenerativeClassifier(_StudentTStory()).fit(X, y)
    assert compilations.count == 0 and np.all(scores > 0.8)
    _assert_counter_sees_compilations(compilations)


def test_padding_rows_leave_the_optimizer_fit_bit_for_bit(monkeypatch):
    """The optimizer on rows padded with rows of weight 0 and on the unpadded rows (padding
    switched off) reaches the same optimum."""
    X, y = load_iris(return_X_y=True)
    X, y = X[:131], y[:131]
    assert padded_rows(*X.shape) > len(y)
    padded = genprob.fit_optimizer(_StudentTStory(), X, y)
    monkeypatch.setattr(execution, "PAD_LIMIT", 0)
    plain = genprob.fit_optimizer(_StudentTStory(), X, y)
    # the sums of another program round otherwise: L-BFGS takes another path to the optimum
    np.testing.assert_allclose(padded.objective, plain.objective, rtol=1e-12)
    for name, value in plain.params.items():
        np.testing.assert_allclose(padded.params[name], value, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "make",
    [lambda: genprob.GenerativeClassifier(_StudentTStory()), genprob.GaussianNB],
    ids=["user_story", "gaussian_nb"],
)
def test_a_posterior_at_a_new_row_count_compiles_nothing(make, compilations):  # noqa: F811
    """NUTS, its starting points, the curvature check, the pointwise log-likelihood and the
    predictive draws all run on rows padded to their bucket (issue 57)."""
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    settings = dict(num_samples=60, num_warmup=60, num_chains=1, random_state=0)
    per_size = []
    for num_rows in (131, 140, 125):
        assert padded_rows(num_rows, X.shape[1]) == padded_rows(131, X.shape[1])
        labels = y[:num_rows].copy()
        labels[::3] = -1  # semi-supervised: the unlabeled rows' sum is in the density
        estimator = make().fit(X[:num_rows], labels)
        compilations.count = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 60 draws: too few for the diagnostics
            idata = estimator.posterior(X[:num_rows], labels, **settings)
        per_size.append(compilations.count)
        assert idata.log_likelihood["obs"].shape == (1, 60, num_rows)
        assert idata.posterior_predictive["y"].shape[-1] == num_rows
    assert per_size[0] > 0 and per_size[1:] == [0, 0]
    _assert_counter_sees_compilations(compilations)


@pytest.mark.parametrize(
    "make",
    [lambda: genprob.GenerativeClassifier(_StudentTStory()), genprob.GaussianNB],
    ids=["user_story", "gaussian_nb"],
)
def test_padding_rows_leave_the_posterior_unchanged(make, monkeypatch):
    """Padding rows are masked out of the density: the same log density and, over a short
    chain, the same draws as on the unpadded rows (padding switched off)."""
    from genprob.inference import mcmc

    X, y = load_iris(return_X_y=True)
    X, y = X[:131], y[:131].copy()
    y[::4] = -1
    estimator = make().fit(X, y)
    settings = dict(num_samples=20, num_warmup=20, num_chains=1, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        padded = estimator.posterior(X, y, **settings)
        story, codes = estimator.story_, np.where(y >= 0, y, -1)
        values = {k: np.asarray(v) for k, v in estimator.params_.items() if not k.startswith("_")}
        args = mcmc._chain_args(story, X, codes, None)
        assert args[1].shape[0] > 131 and not args[4][131:].any()
        density = float(mcmc._log_density(args, values, 3))
        monkeypatch.setattr(execution, "PAD_LIMIT", 0)
        plain_args = mcmc._chain_args(story, X, codes, None)
        assert plain_args[1].shape[0] == 131
        assert float(mcmc._log_density(plain_args, values, 3)) == pytest.approx(density, rel=1e-12)
        plain = estimator.posterior(X, y, **settings)
    for name in padded.posterior.data_vars:
        np.testing.assert_allclose(
            padded.posterior[name].values, plain.posterior[name].values, rtol=1e-6, atol=1e-9
        )
    np.testing.assert_allclose(
        padded.log_likelihood["obs"].values,
        plain.log_likelihood["obs"].values,
        rtol=1e-6,
        atol=1e-6,
    )

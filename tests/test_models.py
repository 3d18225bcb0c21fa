"""The gallery of user-level stories (models/): each script runs small and reports real numbers.

Every script is imported by path (models/ is not a package) and its ``main`` run with small
settings; the assertions are on the numbers it returns.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

MODELS = Path(__file__).resolve().parent.parent / "models"


def load(name):
    spec = importlib.util.spec_from_file_location(f"models_{name}", MODELS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spam_filter_accuracy_and_words(capsys):
    result = load("spam_filter").main()
    assert result["n_train"] + result["n_test"] == 5574
    for model in ("bernoulli", "multinomial"):
        assert result["accuracy"][model] >= 0.95, model
        # the linear boundary is the model's own log-odds (float64)
        assert result["boundary_error"][model] < 1e-9, model
        words = result["spam_words"][model]
        assert {"claim", "prize"} <= set(words), words
        assert not set(words) & set(result["ham_words"][model])
        assert result["confusion"][model].sum() == result["n_test"]
    assert "most spam-indicative words" in capsys.readouterr().out


def test_poisson_counts_beats_chance_and_crosschecks():
    result = load("poisson_counts").main(crosscheck_classes=3)
    chance = result["chance"]
    assert chance < 0.12
    for model in ("poisson", "multinomial"):
        assert result["accuracy"][model] >= 0.85 > 5 * chance, model
    # Poisson NB = multinomial NB + a model of the total: nearly the same decisions here
    assert result["agreement"] >= 0.95
    # pixel counts are far from Poisson (variance = mean), and the script says so
    assert result["dispersion"] > 1.5
    assert result["crosscheck_passed"]
    assert result["crosscheck_max_rel_diff"] < 1e-6


def test_penguins_mixed_table():
    result = load("penguins_mixed").main(n_splits=2)
    assert result["n_rows"] == 333
    accuracy = result["accuracy"]
    assert accuracy["mixed"] >= 0.9
    assert accuracy["gaussian_only"] >= 0.9
    # island and sex alone are informative but far from enough
    assert 0.5 < accuracy["categorical_only"] < accuracy["mixed"]
    islands = result["island_given_species"]
    assert set(islands) == {"Adelie", "Chinstrap", "Gentoo"}
    for row in islands.values():
        assert sum(row.values()) == pytest.approx(1.0, abs=1e-12)
    # Gentoo were sampled on Biscoe only, Chinstrap on Dream only (smoothing leaves a little)
    assert islands["Gentoo"]["Biscoe"] > 0.95
    assert islands["Chinstrap"]["Dream"] > 0.9


def test_kde_naive_bayes_bandwidth_is_u_shaped():
    module = load("kde_naive_bayes")
    bandwidths = [10**-2.5, 0.1, 1.0, 10.0, 10**1.5]
    result = module.main(bandwidths=bandwidths, n_splits=2)
    error = np.asarray(result["error"])
    assert error.shape == (5,)
    best = error.min()
    assert error[0] > best and error[-1] > best  # over- and under-fitting ends
    assert error[-1] > 0.5  # huge bandwidth: the class prior alone decides
    assert best <= 0.06
    assert result["best_bandwidth"] not in (bandwidths[0], bandwidths[-1])
    # held-out density: the log-likelihood peaks inside the sweep too
    log_likelihood = np.asarray(result["log_likelihood"])
    assert log_likelihood.argmax() not in (0, 4)

    # the story is an ordinary genprob story: scoring goes through joint_log_prob
    import jax

    import genprob
    from genprob.engine.capabilities import has_closed_form

    story = module.ParzenNaiveBayesStory(bandwidth=0.5)
    assert has_closed_form(story)
    X = np.array([[0.0, 1.0], [0.2, 0.8], [3.0, -1.0]])
    y = np.array([0, 0, 1])
    with jax.enable_x64(True):
        R = genprob.core.one_hot_responsibilities(y, 2)
        params = genprob.fit_closed_form(story, jax.numpy.asarray(X), R)
        joint = np.asarray(genprob.joint_log_prob(story, params, jax.numpy.asarray(X[:1])))
    # hand-derived: class 0 is the average of two kernels per feature, class 1 one kernel
    from scipy.stats import norm

    expected_0 = np.log(2 / 3) + sum(
        np.log(np.mean([norm.pdf(X[0, j], X[i, j], 0.5) for i in (0, 1)])) for j in range(2)
    )
    expected_1 = np.log(1 / 3) + sum(np.log(norm.pdf(X[0, j], X[2, j], 0.5)) for j in range(2))
    np.testing.assert_allclose(joint[0], [expected_0, expected_1], rtol=1e-10)


def test_student_t_discriminant_is_robust():
    result = load("student_t_discriminant").main(n_splits=1)
    accuracy = result["accuracy"]
    assert result["optimizer_converged"]
    assert result["em_converged"]
    assert all(n >= 2 for n in result["em_n_iter"])
    assert accuracy["student_t"] >= 0.93
    assert accuracy["student_t_em"] >= 0.9
    # the outliers hurt the Gaussian stories, not the Student-t one
    assert accuracy["student_t"] > max(accuracy["lda"], accuracy["qda"]) + 0.03
    assert accuracy["student_t_clean"] >= 0.93
    # heavy tails are learned, and the corrupted rows are nearly ignored
    assert max(result["df"]) < 10
    assert result["outlier_weight"] < 0.05


def test_gda_vs_logistic_learning_curves():
    sizes = {"iris": (6, 100), "breast_cancer": (4, 379)}
    result = load("gda_vs_logistic").main(sizes=sizes, seeds=5)
    iris, cancer = result["iris"], result["breast_cancer"]
    assert iris["sizes"] == [6, 100] and cancer["sizes"] == [4, 379]
    # iris: the generative side wins with two rows per class ...
    assert iris["generative_wins_smallest"]
    assert iris["error"]["lda"][0] + 0.03 < iris["error"]["softmax"][0]
    # ... and every model improves with data
    for curves in (iris, cancer):
        for model, error in curves["error"].items():
            assert error[-1] < error[0], model
    # breast cancer: no small-sample win for GDA (reported), but logistic overtakes Gaussian NB
    assert not cancer["generative_wins_smallest"]
    assert cancer["logistic_overtakes"]["gaussian_nb"]
    assert cancer["error"]["softmax"][-1] < 0.05 < cancer["error"]["gaussian_nb"][-1]

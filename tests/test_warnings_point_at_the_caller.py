"""Every warning of the library names the user's line (``genprob.engine._warnings.warn_user``),
whatever the depth of the library's calls that raise it; from inside scikit-learn's own
helpers, the helper's line that called genprob."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score

import genprob
from genprob.engine._warnings import warn_user

RNG = np.random.default_rng(0)
X = np.vstack([RNG.normal(0.0, 1.0, (30, 3)), RNG.normal(2.0, 1.0, (30, 3))])
Y = np.repeat([0, 1], 30)
PARTLY = np.where(np.arange(60) % 3 == 0, Y, -1)
LIBRARY = os.path.dirname(genprob.__file__) + os.sep


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def test_priors_not_summing_to_one():
    found = _caught(lambda: genprob.LinearDiscriminantAnalysis(priors=[0.2, 0.2]).fit(X, Y))
    ours = [w for w in found if "renormalizing" in str(w.message)]
    assert ours and ours[0].filename == __file__


def test_semi_supervised_em_out_of_iterations():
    found = _caught(lambda: genprob.GaussianNB(max_iter=1).fit(X, PARTLY))
    ours = [w for w in found if issubclass(w.category, ConvergenceWarning)]
    assert ours and all(w.filename == __file__ for w in ours)


def test_mixture_em_out_of_iterations():
    model = genprob.MixtureDiscriminantAnalysis("VVV", 2, max_iter=1)
    found = _caught(lambda: model.fit(X, PARTLY))
    ours = [w for w in found if issubclass(w.category, ConvergenceWarning)]
    assert ours and all(w.filename == __file__ for w in ours)


def test_inside_scikit_learn_the_warning_names_its_helper():
    model = genprob.LinearDiscriminantAnalysis(priors=[0.2, 0.2])
    found = _caught(lambda: cross_val_score(model, X, Y, cv=2))
    ours = [w for w in found if "renormalizing" in str(w.message)]
    assert ours
    for w in ours:  # scikit-learn's line that called fit: neither genprob's nor this file's
        assert not w.filename.startswith(LIBRARY) and w.filename != __file__
        assert "sklearn" in w.filename


def test_a_direct_call_is_its_own_caller():
    with pytest.warns(UserWarning, match="from here") as found:
        warn_user("from here")
    assert found[0].filename == __file__

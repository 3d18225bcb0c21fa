"""Dump one seeded posterior call's ArviZ result to a file, for comparison across ArviZ majors.

``python tests/arviz_parity.py OUT.npz`` writes the groups, variables, dims, coordinates,
attributes and values of ``GaussianNB.posterior`` (NUTS) and two exact posteriors, their PSIS-LOO
numbers, ``az.compare``'s ranking of the two stories and genprob's MLE-vs-posterior table.
``tests/test_arviz_majors.py`` runs it under the other ArviZ major and compares.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402


def _results():
    import pandas as pd

    import genprob

    rng = np.random.default_rng(0)
    names = np.array(["ham", "spam"])
    y = names[rng.integers(0, 2, size=40)]
    X = rng.normal(size=(40, 2)) + np.where(y[:, None] == "spam", [1.5, 0.5], [0.0, 0.0])
    frame = pd.DataFrame(X, columns=["width", "height"])
    nuts = (
        genprob.GaussianNB()
        .fit(frame, y)
        .posterior(
            frame, y, method="nuts", num_warmup=60, num_samples=60, num_chains=2, random_state=1
        )
    )
    words = pd.DataFrame(
        (rng.random((40, 3)) < np.where(y[:, None] == "spam", 0.7, 0.3)).astype(float),
        columns=["free", "win", "hello"],
    )
    common = dict(method="exact", num_samples=300, num_chains=2, random_state=2)
    bernoulli = genprob.BernoulliNB(alpha=1.0).fit(words, y).posterior(words, y, **common)
    multinomial = genprob.MultinomialNB(alpha=1.0).fit(words, y).posterior(words, y, **common)
    return {"nuts": nuts, "bernoulli": bernoulli, "multinomial": multinomial}


def dump(path: str) -> None:
    """Write the results of this interpreter's ArviZ to ``path`` (``.npz``, one JSON entry)."""
    import genprob
    from genprob.io import _arviz_compat as compat

    arrays, meta = {}, {"major": compat.major()}
    results = _results()
    for key, idata in results.items():
        groups = {}
        for group in compat.group_names(idata):
            ds = compat.get_group(idata, group)
            groups[group] = {
                "attrs": {k: str(v) for k, v in ds.attrs.items()},
                "coords": {k: [str(c) for c in v.values] for k, v in ds.coords.items()},
                "vars": {name: list(var.dims) for name, var in ds.data_vars.items()},
            }
            for name, var in ds.data_vars.items():
                arrays[f"{key}/{group}/{name}"] = var.values
        meta[key] = {"groups": groups}
        loo = compat.loo_numbers(compat.loo(idata))
        meta[key]["loo"] = {k: loo[k] for k in ("elpd", "se", "p")}
        arrays[f"{key}/loo/elpd_i"] = loo["elpd_i"]
        arrays[f"{key}/loo/pareto_k"] = loo["pareto_k"]
        table = genprob.mle_vs_posterior_table(idata)
        meta[key]["table_columns"] = list(table.columns)
        meta[key]["table_parameters"] = list(table["parameter"])
        for column in table.columns[1:]:
            arrays[f"{key}/table/{column}"] = table[column].to_numpy(dtype=float)
    compared = compat.compare({k: results[k] for k in ("bernoulli", "multinomial")})
    meta["compare_order"] = [str(i) for i in compared.sort_values("rank").index]
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)


if __name__ == "__main__":
    dump(sys.argv[1])

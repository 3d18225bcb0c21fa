r"""Palmer penguins: one naive Bayes story over measurements *and* categories.

The data are the 333 complete rows of the palmerpenguins table (``genprob.datasets.load_penguins``):
three species (Adelie, Chinstrap, Gentoo) observed on three islands of the Palmer Archipelago.

The story of a penguin: pick the species ``y ~ Categorical(pi)``; then, independently given the
species,

* each body measurement (bill length and depth, flipper length, body mass) is Gaussian,
  ``x_j | y ~ Normal(mu_{yj}, sigma^2_{yj})``;
* the island it was found on and its sex are categorical draws,
  ``island | y ~ Categorical(p^{island}_y)``, ``sex | y ~ Categorical(p^{sex}_y)``.

``genprob.MixedNB`` takes that story as a mapping from DataFrame column names to families; each
family is a block of a ``MixedStory`` fitted in closed form (means and variances for the
Gaussian block, smoothed frequency tables for the categorical block). The study year is left
out: it says when a bird was measured, not what it is.

The island column is strong evidence — Gentoo were only sampled on Biscoe and Chinstrap only on
Dream — but it is not enough alone; the script compares the mixed model with Gaussian NB on the
four measurements only and with categorical NB on island and sex only.

Run: ``python models/penguins_mixed.py``.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedShuffleSplit

import genprob

MEASUREMENTS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
CATEGORIES = ["island", "sex"]


def main(*, n_splits: int = 5, test_size: float = 0.3, seed: int = 0) -> dict:
    """Fit mixed, Gaussian-only and categorical-only naive Bayes on repeated stratified splits.

    Args:
        n_splits: number of random train/test splits the accuracies are averaged over.
        test_size: fraction of the birds held out in each split.
        seed: seed of the splits.

    Returns:
        Dict with ``accuracy`` (model -> mean held-out accuracy over the splits: ``"mixed"``,
        ``"gaussian_only"``, ``"categorical_only"``), ``accuracy_std`` (same keys),
        ``island_given_species`` (species -> {island: probability}, from the last split's mixed
        fit) and ``n_rows``.
    """
    X, y = genprob.datasets.load_penguins(as_frame=True)
    X = X[MEASUREMENTS + CATEGORIES]
    families = {
        **dict.fromkeys(MEASUREMENTS, "gaussian"),
        **dict.fromkeys(CATEGORIES, "categorical"),
    }
    models = {
        "mixed": lambda: genprob.MixedNB(families),
        "gaussian_only": lambda: genprob.GaussianNB(),
        "categorical_only": lambda: genprob.MixedNB(dict.fromkeys(CATEGORIES, "categorical")),
    }
    columns = {"mixed": X.columns, "gaussian_only": MEASUREMENTS, "categorical_only": CATEGORIES}
    print(f"penguins: {len(y)} birds, species counts {y.value_counts().to_dict()}")

    scores = {name: [] for name in models}
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=test_size, random_state=seed)
    for train, test in splitter.split(X, y):
        for name, make in models.items():
            model = make().fit(X.iloc[train][columns[name]], y.iloc[train])
            scores[name].append(model.score(X.iloc[test][columns[name]], y.iloc[test]))
            if name == "mixed":
                mixed = model

    accuracy = {name: float(np.mean(s)) for name, s in scores.items()}
    accuracy_std = {name: float(np.std(s)) for name, s in scores.items()}
    print(f"held-out accuracy over {n_splits} splits (test fraction {test_size}):")
    for name in models:
        print(f"  {name:<17} {accuracy[name]:.4f} +- {accuracy_std[name]:.4f}")

    # Parameters are named by block: "categorical.probs" is (species, column, category).
    probs = mixed.params_["categorical.probs"]
    island = mixed.blocks_["categorical"].index("island")
    islands = mixed.categories_["island"]
    table = {
        str(species): {str(name): float(probs[k, island, m]) for m, name in enumerate(islands)}
        for k, species in enumerate(mixed.classes_)
    }
    print("P(island | species), smoothed (alpha = 1), last split:")
    print("  " + " " * 10 + "".join(f"{name:>11}" for name in islands))
    for species, row in table.items():
        print(f"  {species:<10}" + "".join(f"{p:>11.3f}" for p in row.values()))
    means = mixed.params_["gaussian.means"]
    print("class means of the Gaussian block, last split:")
    for k, species in enumerate(mixed.classes_):
        values = ", ".join(
            f"{c} {m:.1f}" for c, m in zip(mixed.blocks_["gaussian"], means[k], strict=True)
        )
        print(f"  {species:<10} {values}")
    return {
        "accuracy": accuracy,
        "accuracy_std": accuracy_std,
        "island_given_species": table,
        "n_rows": len(y),
    }


if __name__ == "__main__":
    main()

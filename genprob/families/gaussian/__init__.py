"""Gaussian class-conditionals: distributions, moments and shrinkage, covariance structures, the
story, LDA's projection. Public names are re-exported here, with the family's registry record."""

from genprob._lazy import lazy_attribute
from genprob.families._registry import Block, Command, Family
from genprob.families.gaussian.distributions import NUMPYRO_CLASSES
from genprob.families.gaussian.moments import COVARIANCE_ROWS, covariance_of, ledoit_wolf_shrinkage
from genprob.families.gaussian.projection import lda_projection, lda_transform
from genprob.families.gaussian.story import FACTORS, GaussianStory
from genprob.families.gaussian.structures import CovarianceStructure

__all__ = [
    "COVARIANCE_ROWS",
    "FACTORS",
    "FAMILY",
    "GaussianStory",
    "ledoit_wolf_shrinkage",
    "lda_projection",
    "lda_transform",
    "CovarianceStructure",
    "covariance_of",
]

#: NumPyro distributions, imported on first use
__getattr__ = lazy_attribute(__name__, NUMPYRO_CLASSES)

_DATA = ("iris", "wine", "breast_cancer")


_FACES = "genprob.estimators.gaussian:"


def _command(
    name: str, description: str, default: str, in_report=False, face=None, **options
) -> Command:
    others = tuple(d for d in _DATA if d != default)
    face, face_options = face or ("", {})
    return Command(
        name,
        description,
        (default, *others),
        options,
        in_report=in_report,
        face=face and _FACES + face,
        face_options=face_options,
    )


FAMILY = Family(
    story=GaussianStory,
    estimators=(
        "genprob.estimators.gaussian:GaussianNB",
        "genprob.estimators.gaussian:LinearDiscriminantAnalysis",
        "genprob.estimators.gaussian:QuadraticDiscriminantAnalysis",
        "genprob.estimators.mda:MixtureDiscriminantAnalysis",
    ),
    commands=(
        _command(
            "lda",
            "full covariance shared by the classes (LDA), MLE",
            "iris",
            in_report=True,
            face=("LinearDiscriminantAnalysis", {}),
        ),
        _command(
            "qda",
            "full covariance per class (QDA), MLE",
            "wine",
            shared=False,
            face=("QuadraticDiscriminantAnalysis", {}),
        ),
        _command(
            "gaussian_nb",
            "diagonal covariance per class (Gaussian NB), var_smoothing=1e-9",
            "breast_cancer",
            in_report=True,
            covariance="diag",
            shared=False,
            var_smoothing=1e-9,
            face=("GaussianNB", {"var_smoothing": 1e-9}),
        ),
        _command(
            "shared_diag",
            "diagonal covariance shared by the classes, MLE",
            "iris",
            covariance="diag",
        ),
        _command(
            "lda_shrinkage",
            "LDA with shrinkage=0.2",
            "wine",
            shrinkage=0.2,
            face=("LinearDiscriminantAnalysis", {"solver": "lsqr", "shrinkage": 0.2}),
        ),
        _command(
            "lda_ledoit_wolf",
            "LDA with Ledoit-Wolf shrinkage (shrinkage='auto')",
            "breast_cancer",
            shrinkage="auto",
            face=("LinearDiscriminantAnalysis", {"solver": "lsqr", "shrinkage": "auto"}),
        ),
        _command(
            "qda_reg",
            "QDA with reg_param=0.1",
            "iris",
            in_report=True,
            shared=False,
            reg_param=0.1,
            face=("QuadraticDiscriminantAnalysis", {"reg_param": 0.1}),
        ),
        _command(
            "qda_unbiased",
            "QDA with the unbiased covariance (1/(n_k - 1))",
            "wine",
            shared=False,
            estimator="unbiased",
        ),
        Command(
            "mda",
            "Gaussian mixtures within classes, structure and components chosen by BIC (mclust)",
            _DATA,
            note="mda fits the 14 mclust structures with 1 to 3 components per class "
            "(--param n_components=1 for EDDA, --param structure=VVV for one structure).",
            face="genprob.estimators.mda:MixtureDiscriminantAnalysis",
            face_options={"structure": "all", "n_components": (1, 2, 3)},
        ),
    ),
    # a block of a mixed table: Gaussian naive Bayes (GaussianNB) on its columns
    block=Block(
        lambda context, var_smoothing: GaussianStory("diag", False, var_smoothing=var_smoothing),
        settings=("var_smoothing",),
    ),
)

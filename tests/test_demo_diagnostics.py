"""Issue 60: the demo's default run passes its own diagnostics at its seed, and its advice
names the mode the user ran."""

import re
import warnings

import pytest

from genprob.app import cli, report

# genprob.inference.mcmc's words for the two failures of the run
RHAT_ADVICE = (
    "NUTS diagnostics: max R-hat 1.013 > 1.01 (on 'class_prior'): the chains have not mixed "
    "(too few warm-up iterations or draws). Run more warm-up and draws."
)
ESS_ADVICE = (
    "NUTS diagnostics: min bulk ESS 5 < 400: too few draws for stable estimates. Increase "
    "num_samples (or num_chains)."
)


def test_advice_names_the_quick_mode():
    lines = cli.demo_advice([RHAT_ADVICE, ESS_ADVICE], report.Settings.preset(quick=True))
    # the library's words as they are (issue 56: the CLI does not rewrite them), then the remedy
    assert lines == [
        RHAT_ADVICE,
        ESS_ADVICE,
        "in the demo: run without --quick for more draws.",
    ]


def test_advice_of_the_full_mode_never_says_to_leave_quick():
    settings = report.Settings.preset(quick=False, seed=3)
    remedy = (
        "in the demo: this was the full demo, 4 chains x 1000 draws at --seed 3: try another "
        "--seed, or genprob compare with more --num-samples and --chains."
    )
    lines = cli.demo_advice([RHAT_ADVICE, ESS_ADVICE, RHAT_ADVICE], settings)
    assert lines == [RHAT_ADVICE, ESS_ADVICE, remedy]  # one line per piece of advice
    assert not any("--quick" in line for line in lines)
    # advice about something else is passed on as it is, with no remedy about draws
    assert cli.demo_advice(["Plain advice. Second sentence."], settings) == [
        "Plain advice. Second sentence."
    ]


@pytest.mark.slow
@pytest.mark.arviz
def test_the_default_demo_passes_its_own_nuts_diagnostics_at_its_seed():
    """2 chains x 500 draws reported R-hat 1.013 (not converged) on the demo's own posterior."""
    from genprob.inference.mcmc import ESS_MIN, RHAT_MAX

    settings = report.Settings.preset()
    assert (settings.nuts_chains, settings.nuts_samples, settings.seed) == (4, 1000, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        section = report.posterior_section(settings)
    text = section.markdown
    r_hat = float(re.search(r"largest R-hat (\d\.\d+)", text).group(1))
    ess = float(re.search(r"smallest bulk ESS (\d+)", text).group(1))
    assert r_hat <= RHAT_MAX and ess >= ESS_MIN, (r_hat, ess)
    assert "not converged" not in text and "too few draws" not in text
    assert "(4 chain(s), 500 warm-up iterations, 1000 draws each; 0 divergences" in text
    assert not [w for w in caught if "diagnostics" in str(w.message)]

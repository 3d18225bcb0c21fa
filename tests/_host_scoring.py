"""Shared check of the tests of host scoring: predictions on the host against the compiled ones."""

import jax.numpy as jnp
import numpy as np

from genprob.engine import execution
from genprob.engine._dtype import precision


def host_and_device_log_proba(estimator, rows, dtype):
    """``predict_log_proba`` of ``rows`` on the host and the compiled program's on the same
    rows, after checking that the estimator's story scores them on the host; the host values
    are in ``dtype``, finite as probabilities, and equal the compiled ones (1e-9 in float64)."""
    with precision(dtype):
        params = estimator._params_jax()
        assert execution.on_host(estimator.story_, rows)
        # JAX rows run the compiled program
        on_device = execution.class_posteriors(estimator.story_, params, jnp.asarray(rows))
    on_host = estimator.predict_log_proba(rows)
    assert on_host.dtype == np.dtype(dtype)
    assert np.all(np.isfinite(np.exp(on_host)))
    tolerance = 1e-9 if dtype == "float64" else 2e-3
    np.testing.assert_allclose(np.exp(on_host), np.exp(on_device), atol=tolerance)
    return on_host, tolerance

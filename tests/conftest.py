"""Shared test helpers: dtype-keyed tolerances and a headless plotting backend."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402

from genprob.engine._dtype import TOLERANCES  # noqa: E402


@pytest.fixture
def tol():
    """Tolerances keyed by dtype name: ``tol["float64"]["rtol"]``."""
    return TOLERANCES


def pytest_configure(config):
    """Import ArviZ once in the main process before test workers start: ArviZ 0.x writes a
    daily stamp in the user's cache at its first import of a day, and two workers importing it
    at once race on the file (genprob's own import retries; tests import it directly too).
    Without workers (``-n 0``) nothing races and the import waits for the tests needing it."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from genprob.io._arviz_compat import arviz

        arviz()


def pytest_collection_modifyitems(items):
    """Notebook 02 is ArviZ-facing: `-m arviz` (the ArviZ 1.x run of `make test`) selects it."""
    for item in items:
        if item.path.name == "02_mle_vs_posterior.ipynb":
            item.add_marker(pytest.mark.arviz)


#: Memory mappings a test process may hold before its compiled programs are dropped. Every XLA
#: CPU executable keeps ~15-30 mappings while cached; a worker that compiles thousands of programs
#: reaches Linux's vm.max_map_count (65,530) and then dies inside XLA (SIGSEGV/SIGABRT). The
#: library's own guard (genprob/engine/_mappings.py) acts at half the limit; the suite drops
#: earlier.
_MAX_MAPPINGS = 20_000


def _mappings() -> int:
    from genprob.engine._mappings import mapping_count

    return mapping_count() or 0  # None: not Linux, no such limit to watch


@pytest.fixture(autouse=True, scope="module")
def _bounded_compiled_programs():
    """After a test module, drop cached programs if the process holds many mappings."""
    yield
    if _mappings() > _MAX_MAPPINGS:
        import gc

        import jax

        jax.clear_caches()
        gc.collect()


@pytest.fixture(scope="module")
def client():
    """A real two-process Dask ``LocalCluster`` for a module's tests (skipped without Dask)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
        worker_dashboard_address=None,
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()

"""Issue 48: nothing lost, nothing silently wrong. Each test names the issue's item it reproduces
(each failed before its fix): atomic saves, bounded loads, non-regular files, tampered files,
labels kept exactly, posterior sizes checked before allocating."""

import os
import subprocess
import sys

import numpy as np
import pytest

import genprob
from genprob import persistence

X_TINY = np.array([[0.0, 1.0], [0.5, 1.5], [1.0, 0.2], [3.0, 4.0], [3.5, 3.0], [4.0, 5.0]])
Y_TINY = np.array([0, 0, 0, 1, 1, 1])


@pytest.fixture(scope="module")
def tiny():
    return genprob.GaussianNB().fit(X_TINY, Y_TINY)


def _same_model(loaded, estimator):
    np.testing.assert_array_equal(loaded.predict_proba(X_TINY), estimator.predict_proba(X_TINY))


# -- item 4: a failed save leaves the model at that path intact -----------------------------------
def test_item4_failed_save_keeps_the_old_model(tiny, tmp_path, monkeypatch):
    path = tiny.save(tmp_path / "model.npz")
    before = path.read_bytes()
    other = genprob.GaussianNB().fit(X_TINY * 2, Y_TINY)

    def failing(stream, *args, **kwargs):
        stream.write(b"PK\x03\x04 half an archive")
        raise OSError(27, "File too large")

    monkeypatch.setattr(persistence.np, "savez_compressed", failing)
    with pytest.raises(OSError, match="File too large"):
        other.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    _same_model(genprob.load(path), tiny)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]  # no temporary file left


_FSIZE_SCRIPT = """
import resource, signal, sys
import numpy as np
import genprob
old = genprob.load(sys.argv[1])
bigger = genprob.MultinomialNB().fit(np.random.default_rng(0).poisson(3, (50, 4000)), [0, 1] * 25)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write beyond the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, resource.RLIM_INFINITY))
try:
    bigger.save(sys.argv[1])
except OSError as error:
    print("refused", error.errno)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_item4_file_too_large_keeps_the_old_model(tiny, tmp_path):
    """The issue's case: a real ``File too large`` (a file-size limit) in the middle of a write."""
    path = tiny.save(tmp_path / "model.npz")
    before = path.read_bytes()
    assert len(before) < 20_000
    result = subprocess.run(
        [sys.executable, "-c", _FSIZE_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["refused", "27"]  # EFBIG
    assert path.read_bytes() == before
    _same_model(genprob.load(path), tiny)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]


def test_item4_save_replaces_and_keeps_the_file_mode(tiny, tmp_path):
    path = tiny.save(tmp_path / "model.npz")
    os.chmod(path, 0o640)
    other = genprob.GaussianNB().fit(X_TINY * 2, Y_TINY)
    other.save(path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    _same_model(genprob.load(path), other)


def test_item4_save_through_a_symlink_writes_its_target(tiny, tmp_path):
    target = tiny.save(tmp_path / "real.npz")
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    other = genprob.GaussianNB().fit(X_TINY * 2, Y_TINY)
    other.save(link)
    assert link.is_symlink()
    _same_model(genprob.load(target), other)

"""Alias of :mod:`genprob.io.persistence`: ``import genprob.persistence`` keeps working."""

import sys

from genprob.io import persistence as _module

sys.modules[__name__] = _module

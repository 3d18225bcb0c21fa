"""Alias of :mod:`genprob.engine.em`: ``import genprob.em`` keeps working."""

import sys

from genprob.engine import em as _module

sys.modules[__name__] = _module

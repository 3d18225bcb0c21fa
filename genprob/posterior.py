"""Alias of :mod:`genprob.inference.posterior`: ``import genprob.posterior`` keeps working."""

import sys

from genprob.inference import posterior as _module

sys.modules[__name__] = _module

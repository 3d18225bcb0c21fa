"""Alias of :mod:`genprob.inference.mcmc`: ``import genprob.mcmc`` keeps working."""

import sys

from genprob.inference import mcmc as _module

sys.modules[__name__] = _module

"""Alias of :mod:`genprob.engine.streaming`: ``import genprob.streaming`` keeps working."""

import sys

from genprob.engine import streaming as _module

sys.modules[__name__] = _module

"""Alias of :mod:`genprob.io.arviz_io`: ``import genprob.arviz_io`` keeps working."""

import sys

from genprob.io import arviz_io as _module

sys.modules[__name__] = _module

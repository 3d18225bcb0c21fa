"""Applications built on the genprob library: the command line, the demo report, the tour.

The library (everything outside ``genprob.app``) never imports from here; these modules import
the library like any user would.
"""

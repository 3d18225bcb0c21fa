"""The package version (a leaf module, so that any genprob module can read it)."""

__version__ = "0.1.0"

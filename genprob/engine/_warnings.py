"""Warnings to the user, attributed to the user's line (no stacklevel to keep in step with the
library's call depth)."""

from __future__ import annotations

import inspect
import os
import warnings

__all__ = ["warn_user"]

#: The library's files (genprob/ without the application code of genprob/app/, which calls it).
_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_APPLICATION = os.path.join(_LIBRARY, "app") + os.sep


def _in_library(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(_LIBRARY) and not path.startswith(_APPLICATION)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the first caller outside the library: the user's line, however deep
    the library's own calls (Python 3.12's ``skip_file_prefixes``, on every Python we support)."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and _in_library(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    del frame  # no reference cycle through the frames
    warnings.warn(message, category, stacklevel=level)

"""MkDocs hook: serve MathJax from the site itself, so formulas render with no network.

The JavaScript comes from the ``django-static-mathjax`` wheel (MathJax 3, no Django needed at
build time: only its static files are read). ``tex-svg.js`` is self-contained (the SVG output
needs no web fonts), so one file is enough.
"""

from __future__ import annotations

from importlib.resources import files

from mkdocs.structure.files import File

MATHJAX = "javascripts/mathjax/tex-svg.js"


def on_files(files_, config, **kwargs):
    source = files("mathjax") / "static" / "mathjax" / "es5" / "tex-svg.js"
    files_.append(File.generated(config, MATHJAX, abs_src_path=str(source)))
    return files_

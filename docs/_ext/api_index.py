"""MkDocs hook: the public-API index on the ``genprob`` reference page.

``genprob/__init__.py`` re-exports the public API in topic sections (``# -- topic --`` ...
``# -- end topic --``). This hook lists every re-exported name under its section, with the first
line of its docstring and a link to the reference page that documents it, in place of the
``<!-- public-api -->`` marker. It reads the package statically with griffe (nothing is
imported), so a name added to ``__init__.py`` appears on the next build.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import griffe

MARKER = "<!-- public-api -->"
PAGE = "reference/genprob.md"
#: Reference page (relative to reference/) documenting each module, longest prefix first.
MODULE_PAGES = {
    "genprob.story": "story.md",
    "genprob.core": "core.md",
    "genprob.families": "families.md",
    "genprob.estimators": "estimators.md",
    "genprob.engine.em": "em.md",
    "genprob.inference.mcmc": "mcmc.md",
    "genprob.inference.optimize": "optimize.md",
    "genprob.inference.crosscheck": "crosscheck.md",
    "genprob.boundaries": "boundaries.md",
    "genprob.io.persistence": "persistence.md",
    "genprob.datasets": "datasets.md",
    "genprob.inference.posterior": "posterior.md",
    "genprob.inference.conjugate": "conjugate.md",
    "genprob.inference.draws": "draws.md",
    "genprob.io.arviz_io": "arviz_io.md",
}
#: Pages that document their objects under the package-root name (``genprob.GaussianNB``).
PAGES_BY_ROOT_NAME = {"estimators.md", "families.md"}
_SECTION = re.compile(r"^# -- (?!end\b)(.+?) --\s*$")
_END = re.compile(r"^# -- end\b")


def _rst_to_markdown(text: str) -> str:
    """The docstring rewriting of the site's griffe extension (``rst_markup.py`` beside this)."""
    spec = importlib.util.spec_from_file_location(
        "rst_markup", Path(__file__).with_name("rst_markup.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.to_markdown(text)


def _escape_pipes(text: str) -> str:
    """Escape ``|`` for a table cell, except inside code spans (the table parser skips those)."""
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(part if i % 2 else part.replace("|", "\\|") for i, part in enumerate(parts))


def _sections(source: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(section title, [(name, defining module)]) in the order of ``__init__.py``."""
    lines = source.splitlines()
    title_at = {}
    current = "Core"
    for number, line in enumerate(lines, start=1):
        if _SECTION.match(line):
            current = _SECTION.match(line).group(1)
            current = re.sub(r"\s*\(.*\)$", "", current)  # drop "(issue: ...)" notes
        elif _END.match(line):
            current = "Core"
        title_at[number] = current
    sections: dict[str, list[tuple[str, str]]] = {}
    # names served on first use are imported under ``if typing.TYPE_CHECKING:``
    imports = (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom))
    for node in sorted(imports, key=lambda node: node.lineno):
        names = [
            (alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names
        ]
        sections.setdefault(title_at[node.lineno], []).extend(names)
    return [(title, names) for title, names in sections.items()]


def _page_of(path: str) -> str | None:
    for prefix in sorted(MODULE_PAGES, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + "."):
            return MODULE_PAGES[prefix]
    return None


def _row(package: griffe.Module, name: str, path: str) -> str:
    # Resolve through the module it was imported from: ``genprob.crosscheck`` the module and
    # ``crosscheck`` the function share a name in the package namespace.
    try:
        target = package
        for part in path.split(".")[1:]:
            target = target.members[part]
        target = target.final_target if target.is_alias else target
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return f"| `{name}` | |"
    page = _page_of(target.path)
    kind = "module" if target.is_module else target.kind.value
    label = f"`{name}`"
    if page is not None:
        anchor = "" if target.is_module else f"#{target.path}"
        if page in PAGES_BY_ROOT_NAME:
            anchor = f"#genprob.{name}"
        label = f"[`{name}`]({page}{anchor})"
    summary = target.docstring.value.strip().split("\n\n")[0] if target.docstring else ""
    summary = _escape_pipes(" ".join(_rst_to_markdown(summary).split()))
    return f"| {label} | {kind} | {summary} |"


def api_index(root: Path) -> str:
    """Markdown tables of the public API of ``genprob``, one per section of ``__init__.py``."""
    source = (root / "genprob" / "__init__.py").read_text(encoding="utf-8")
    package = griffe.load("genprob", search_paths=[str(root)], resolve_aliases=True)
    parts = []
    for title, names in _sections(source):
        parts.append(f"### {title[0].upper() + title[1:]}\n")
        parts.append("| name | kind | summary |\n|---|---|---|")
        parts.extend(_row(package, name, path) for name, path in names)
        parts.append("")
    return "\n".join(parts)


def on_page_markdown(markdown, page, config, files, **kwargs):
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    root = Path(config["config_file_path"]).parent
    return markdown.replace(MARKER, api_index(root))

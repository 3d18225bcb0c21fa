"""Griffe extension: render the reStructuredText bits of genprob's docstrings as Markdown.

The docstrings are Google style, but their prose uses a few reStructuredText habits that
mkdocstrings would print verbatim: cross-reference roles (``:func:`genprob.fit_em```), literal
blocks introduced by ``::`` and simple tables drawn with ``====`` rules. This extension rewrites
them in the docstrings it loads, for the documentation site only (the source is unchanged):

* ``:role:`~pkg.mod.name``` becomes ``name`` in code, ``:role:`target``` becomes ``target``;
* a trailing ``::`` becomes ``:`` (the indented block after it is already Markdown code);
* a simple table becomes a Markdown table.
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(?:mod|class|meth|func|data|attr|obj|exc|const):`~?([^`]+)`")
_RULE = re.compile(r"^(\s*)(=+(?: +=+)+)\s*$")


def _role(match: re.Match) -> str:
    text = match.group(1)
    if match.group(0).split("`", 1)[1].startswith("~"):
        text = text.rsplit(".", 1)[-1]
    return f"``{text}``"


def _columns(rule: str, indent: int) -> list[tuple[int, int]]:
    return [(m.start() + indent, m.end() + indent) for m in re.finditer(r"=+", rule)]


def _cells(line: str, columns: list[tuple[int, int]]) -> list[str]:
    cells = []
    for i, (start, _) in enumerate(columns):
        end = columns[i + 1][0] if i + 1 < len(columns) else len(line)
        cells.append(line[start:end].strip())
    return cells


def _tables(text: str) -> str:
    """Replace simple tables (rule, header, rule, rows, rule) by Markdown tables."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _RULE.match(lines[i])
        rules = [j for j in range(i, min(len(lines), i + 200)) if _RULE.match(lines[j])]
        if match and len(rules) >= 3 and rules[1] == i + 2:
            indent = match.group(1)
            columns = _columns(match.group(2), len(indent))
            header = _cells(lines[i + 1], columns)
            rows = [_cells(lines[j], columns) for j in range(i + 3, rules[2]) if lines[j].strip()]
            out.append(indent + "| " + " | ".join(header) + " |")
            out.append(indent + "|" + "---|" * len(header))
            out.extend(indent + "| " + " | ".join(row) + " |" for row in rows)
            i = rules[2] + 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def to_markdown(text: str) -> str:
    """The docstring ``text`` with its reStructuredText markup rewritten as Markdown."""
    text = _ROLE.sub(_role, text)
    text = re.sub(r"(?m)(\S)::$", r"\1:", text)
    text = re.sub(r"(?m)^(\s*)::$", "", text)
    return _tables(text)


class RstMarkup(griffe.Extension):
    """Rewrite every loaded docstring with :func:`to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)

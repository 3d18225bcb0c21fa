"""The tour notebooks, executed while the site builds and shown as pages with their outputs.

MkDocs hook. ``on_files`` starts one child process that executes every notebook with nbclient
(Jupyter's own executor; its kernel runs in ``notebooks/``, as ``jupyter lab`` would) while the
rest of the site builds, and adds a page per notebook (``notebooks/NAME.md``) next to the
committed ``.ipynb`` (served as a download). ``on_page_read_source`` waits for that process and
renders the executed notebook as Markdown: markdown cells as they are, code cells as Python
blocks, text outputs as ``<pre class="nb-output">`` and figures as inline PNG images. A cell
that raises fails the build. The committed notebooks stay without outputs
(tests/test_notebooks.py).
"""

from __future__ import annotations

import base64
import html
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "notebooks"
NOTEBOOKS = ("01_tour.ipynb", "02_mle_vs_posterior.ipynb")
CELL_TIMEOUT = 900

_run: dict = {}


def execute(names, out_dir) -> None:
    """Execute each notebook of ``SOURCE`` and write it, outputs included, into ``out_dir``."""
    import nbformat
    from nbclient import NotebookClient

    for name in names:
        notebook = nbformat.read(SOURCE / name, as_version=4)
        client = NotebookClient(
            notebook,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            resources={"metadata": {"path": str(SOURCE)}},
        )
        client.execute()
        nbformat.write(notebook, Path(out_dir) / name)


def on_files(files, config, **kwargs):
    """MkDocs hook: start executing the notebooks; add their pages and their files."""
    from mkdocs.structure.files import File

    out_dir = tempfile.mkdtemp(prefix="genprob-notebooks-")
    _run["dir"] = Path(out_dir)
    # a kernel shows figures inline only when no MPLBACKEND (CI sets Agg) overrides Jupyter's
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    _run["process"] = subprocess.Popen(
        [sys.executable, __file__, out_dir, *NOTEBOOKS],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for name in NOTEBOOKS:
        files.append(File.generated(config, f"notebooks/{name}", abs_src_path=str(SOURCE / name)))
        page = f"notebooks/{Path(name).stem}.md"
        files.append(File.generated(config, page, content=f"# {name}\n"))
    return files


def _executed(name: str):
    import nbformat

    process = _run["process"]
    if process.returncode is None:
        _, stderr = process.communicate()
        _run["stderr"] = stderr
    if process.returncode != 0:
        from mkdocs.exceptions import PluginError

        tail = "\n".join(_run.get("stderr", "").splitlines()[-30:])
        raise PluginError(f"executing the notebooks failed:\n{tail}")
    return nbformat.read(_run["dir"] / name, as_version=4)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _output(output, cell: int) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text", ""))
        if "TqdmWarning: IProgress not found" in text:  # no Jupyter widgets in the build's kernel
            return ""
        # progress bars redraw a line with carriage returns: keep the final state of each line
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n")).strip("\n")
        return f'<pre class="nb-output"><code>{html.escape(text)}</code></pre>' if text else ""
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        if "image/png" in data:
            png = _text(data["image/png"]).replace("\n", "")
            base64.b64decode(png, validate=True)  # a damaged figure fails the build here
            return (
                f'<img class="genprob-figure nb-output" alt="Figure made by cell {cell}" '
                f'src="data:image/png;base64,{png}">'
            )
        if "text/plain" in data:
            text = _text(data["text/plain"])
            return f'<pre class="nb-output"><code>{html.escape(text)}</code></pre>'
    return ""


def render(notebook, name: str) -> str:
    """Markdown of an executed notebook, with a line linking the notebook file after its title."""
    parts, linked, count = [], False, 0
    note = (
        f"*Executed while this site was built. [Download `{name}`]({name}) to run it yourself "
        "with `jupyter lab` in a checkout (`make install` first).*"
    )
    for cell in notebook.cells:
        source = _text(cell.source).strip("\n")
        if cell.cell_type == "markdown":
            parts.append(source)
            if not linked and source.startswith("# "):
                parts.append(note)
                linked = True
        elif cell.cell_type == "code" and source:
            count += 1
            parts.append(f"```python\n{source}\n```")
            parts += [shown for o in cell.get("outputs", []) if (shown := _output(o, count))]
    if not linked:
        parts.insert(0, note)
    return "\n\n".join(parts) + "\n"


def on_page_read_source(page, config, **kwargs):
    """MkDocs hook: a notebook's page is the notebook executed (waits for the child process)."""
    stem = page.file.src_uri.removeprefix("notebooks/").removesuffix(".md")
    name = f"{stem}.ipynb"
    if not page.file.src_uri.startswith("notebooks/") or name not in NOTEBOOKS:
        return None
    return render(_executed(name), name)


if __name__ == "__main__":
    execute(sys.argv[2:], sys.argv[1])

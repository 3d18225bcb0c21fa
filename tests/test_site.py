"""The documentation site: built strictly, served on 127.0.0.1, read in Chromium.

Marked ``docs``: ``make test`` runs it after the strict build, on that build (``GENPROB_SITE``
names the built site; without it the test builds one). It needs Debian's ``chromium``
(``make browser`` installs it) and Playwright's Python package (the docs extra).
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("GENPROB_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    built = os.environ.get("GENPROB_SITE")
    if built:
        path = Path(built).resolve()
        assert (path / "index.html").is_file(), f"GENPROB_SITE={built} holds no built site"
        return path
    path = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(path)],
        cwd=ROOT,
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return path


def pages(site: Path) -> list[str]:
    """URL paths of every page ("/", "/concepts/", ...)."""
    return sorted(
        "/" if p.parent == site else f"/{p.parent.relative_to(site).as_posix()}/"
        for p in site.rglob("index.html")
    )


@pytest.fixture(scope="module")
def server(site):
    """The site on 127.0.0.1 (a free port), for the length of the module."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


# Everything the page shows, measured in the browser once MathJax has finished.
_PROBE = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) await MathJax.typesetPromise();
  }
  const content = document.querySelector("article.md-content__inner");
  const clone = content.cloneNode(true);
  clone.querySelectorAll("pre, code, mjx-container, script").forEach((n) => n.remove());
  const text = clone.innerText;
  const images = [...content.querySelectorAll("img")].map((img) => ({
    alt: img.alt, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
  }));
  const area = content.getBoundingClientRect().width;
  const tables = [...content.querySelectorAll("table")].map((t) => ({
    width: t.getBoundingClientRect().width,
    head: t.rows.length ? t.rows[0].innerText.slice(0, 60) : "",
  }));
  const cells = [...content.querySelectorAll("td, th")].map((c) => c.innerText.trim());
  const overflowing = [...content.querySelectorAll("pre")]
    .filter((p) => p.scrollWidth > p.clientWidth + 1)
    .map((p) => `${p.scrollWidth}px > ${p.clientWidth}px: ${p.innerText.slice(0, 60)}`);
  const outputs = {
    text: content.querySelectorAll("pre.nb-output").length,
    figures: content.querySelectorAll("img.nb-output").length,
  };
  const formulas = content.querySelectorAll(".arithmatex").length;
  const unrendered = [...content.querySelectorAll(".arithmatex")]
    .filter((m) => !m.querySelector("mjx-container")).map((m) => m.textContent.slice(0, 60));
  return {text, images, area, tables, cells, formulas, unrendered, overflowing, outputs};
}
"""


def test_every_page_reads_offline_in_chromium(site, server, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: run `make browser` (Debian's chromium)"
    host = urlparse(server).netloc
    outside = []

    def only_local(route):
        if urlparse(route.request.url).netloc == host or route.request.url.startswith("data:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    failures, totals = [], {"pages": 0, "images": 0, "formulas": 0, "tables": 0}
    figures, outputs = {}, {}
    with playwright.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        context.route("**/*", only_local)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        for path in pages(site):
            response = page.goto(server + path, wait_until="load")
            assert response is not None and response.ok, path
            seen = page.evaluate(_PROBE)
            totals["pages"] += 1
            figures[path] = len(seen["images"])
            outputs[path] = seen["outputs"]
            totals["images"] += len(seen["images"])
            totals["formulas"] += seen["formulas"]
            totals["tables"] += len(seen["tables"])
            for raw in ("\\(", "\\[", "$$"):
                if raw in seen["text"]:
                    at = seen["text"].index(raw)
                    failures.append(
                        f"{path}: raw {raw!r} in the text: {seen['text'][at : at + 60]!r}"
                    )
            failures += [f"{path}: formula not typeset: {m!r}" for m in seen["unrendered"]]
            failures += [
                f"{path}: image {im['alt']!r} not loaded ({im['width']}x{im['height']})"
                for im in seen["images"]
                if not (im["complete"] and im["width"] > 0 and im["height"] > 0)
            ]
            failures += [
                f"{path}: table {t['head']!r} is {t['width']:.0f}px, wider than the content "
                f"area ({seen['area']:.0f}px)"
                for t in seen["tables"]
                if t["width"] > seen["area"] + 1
            ]
            failures += [
                f"{path}: placeholder cell {c!r}" for c in seen["cells"] if c in ("…", "...")
            ]
            failures += [f"{path}: code block cut at 1280 px: {o}" for o in seen["overflowing"]]
        context.close()
    failures += [f"script error: {e}" for e in errors]
    failures += [f"request left 127.0.0.1: {url}" for url in outside]
    print(totals)
    assert not failures, "\n".join(failures)
    # the site has its figures and its maths (numbers from this build, as of this commit)
    assert totals["images"] >= 10 and totals["formulas"] >= 100, totals
    # figures where a new reader looks first: home (a boundary and a posterior), getting
    # started and every how-to
    howtos = [f"/howto/{p.stem}/" for p in sorted((ROOT / "docs" / "howto").glob("*.md"))]
    wanted = {"/": 2, "/getting_started/": 1, **dict.fromkeys(howtos, 1)}
    few = {p: figures.get(p) for p, n in wanted.items() if (figures.get(p) or 0) < n}
    assert not few, f"pages with fewer figures than {wanted}: {few}"
    # the notebooks are shown executed: their text outputs and their figures
    for name in ("01_tour", "02_mle_vs_posterior"):
        shown = outputs.get(f"/notebooks/{name}/")
        assert shown and shown["text"] >= 3 and shown["figures"] >= 2, (name, shown)


class _Sections(HTMLParser):
    """Per ``<h2>`` section: the table cells, and the numbers marked as quoted from a table."""

    def __init__(self):
        super().__init__()
        self.sections = [{"title": "", "cells": [], "quoted": [], "prose": []}]
        self._stack, self._cell, self._quote, self._title = [], None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self.sections.append({"title": "", "cells": [], "quoted": [], "prose": []})
            self._title = ""
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "span" and "from-table" in (attrs.get("class") or ""):
            self._quote = ""
        self._stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "h2" and self._title is not None:
            self.sections[-1]["title"], self._title = self._title, None
        elif tag in ("td", "th") and self._cell is not None:
            self.sections[-1]["cells"].append(self._cell.strip())
            self._cell = None
        elif tag == "span" and self._quote is not None:
            self.sections[-1]["quoted"].append(self._quote.strip())
            self._quote = None
        if self._stack:
            self._stack.pop()

    def handle_data(self, data):
        if self._title is not None:
            self._title += data
        if self._cell is not None:
            self._cell += data
        if self._quote is not None:
            self._quote += data
        if self._cell is None and not {"pre", "code", "script", "style"} & set(self._stack):
            self.sections[-1]["prose"].append(data)


def _sections(site: Path, page: str):
    parser = _Sections()
    parser.feed((site / page / "index.html").read_text(encoding="utf-8"))
    return parser.sections


#: Numbers in the prose of a section with tables that are deliberately not table values.
NOT_FROM_TABLE = {
    ("gallery", "Robust discriminant analysis", "0.002"): "weight of a corrupted row / clean row",
    ("benchmarks", "NUTS on partly labeled data", "0.002"): "agreement of the posterior means",
}
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d{2,}(?![\w.])")


@pytest.mark.parametrize("page", ["gallery", "benchmarks"])
def test_numbers_quoted_in_prose_are_in_the_tables_they_describe(site, page):
    quoted = 0
    for section in _sections(site, page):
        cells = " ".join(section["cells"])
        for number in section["quoted"]:  # generated sentences mark what they quote
            quoted += 1
            assert number in section["cells"], f"{page} / {section['title']}: {number} not a cell"
        if not section["cells"]:
            continue
        # hand-written prose: every number with two or more decimals must be in the tables
        for number in _DECIMAL.findall(" ".join(section["prose"])):
            allowed = any(
                p == page and section["title"].startswith(t) and n == number
                for p, t, n in NOT_FROM_TABLE
            )
            assert allowed or re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", cells), (
                f"{page} / {section['title']}: the prose quotes {number}, which no table shows"
            )
    assert quoted >= 6, f"{page}: expected generated sentences quoting the tables, found {quoted}"


def test_gallery_learning_curve_verdict_follows_its_table(site):
    """The sizes where LDA is said to be ahead of softmax regression are those of the table."""
    (section,) = [s for s in _sections(site, "gallery") if "learning curves" in s["title"]]
    prose = " ".join(section["prose"])
    cells = section["cells"]
    assert "from the smallest size" not in prose
    tables, current = [], None
    for cell in cells:  # header: m, Gaussian NB, LDA, softmax; then 4 cells per row
        if cell == "m":
            current = []
            tables.append(current)
        current.append(cell)
    for name, table in zip(("Iris", "Breast cancer"), tables, strict=True):
        rows = [table[i : i + 4] for i in range(4, len(table), 4)]
        ahead = [int(r[0]) for r in rows if float(r[2]) < float(r[3])]
        sentence = prose[prose.index(name) :]
        match = re.search(r"LDA is ahead of softmax regression at m = ([\d, ]+)", sentence[:600])
        if 0 < len(ahead) < len(rows):
            assert match, f"{name}: the sizes where LDA is ahead are not stated"
            stated = [int(m) for m in match.group(1).strip(" ,").split(",")]
            assert stated == ahead, (name, stated, ahead)
        elif ahead:
            assert "LDA stays ahead of softmax regression at every size" in sentence[:600]
        else:
            assert "softmax regression is ahead of LDA at every size" in sentence[:600]


def test_reference_is_headed_by_public_names_only(site):
    """No private module, class or helper heads a reference entry; signatures are wrapped."""
    headings, signatures = [], 0
    for page in sorted((site / "reference").rglob("index.html")):
        html = page.read_text(encoding="utf-8")
        headings += re.findall(r'<h[2-4] id="(genprob[^"]*)"', html)
        signatures += html.count("doc-signature")
        assert "Bases:" not in html, f"{page}: base classes shown"
    assert len(headings) > 100, len(headings)
    private = [h for h in headings if any(part.startswith("_") for part in h.split("."))]
    assert not private, private
    for helper in ("to_bcoo", "check_non_negative", "GenerativeClassifierBase"):
        assert not [h for h in headings if h.endswith(helper)], helper
    assert signatures > 50, signatures  # separate, wrapped signature blocks

// MathJax settings for pymdownx.arithmatex (generic mode): $...$ inline, $$...$$ display.
// MathJax itself (tex-svg.js) is served from the site: no request leaves it.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  svg: { fontCache: "global" },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

document$.subscribe(() => {
  if (!MathJax.typesetPromise) return; // first page: MathJax typesets it on load
  MathJax.startup.output.clearCache();
  MathJax.typesetClear();
  MathJax.texReset();
  MathJax.typesetPromise();
});

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

// Material calls this once per page load: typeset again once MathJax has started.
document$.subscribe(() => {
  if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) return;
  MathJax.startup.promise.then(() => {
    MathJax.typesetClear();
    MathJax.texReset();
    return MathJax.typesetPromise();
  });
});

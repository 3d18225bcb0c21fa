# Reference class posteriors of R MASS's predict.lda for tests/test_mass_lda.py.
# Run from the repository root (needs R with MASS; the data are the mclust references' CSVs):
#   Rscript tests/references/mass/make_mass_reference.R
# Writes tests/references/mass/mass_lda_reference.csv (long format: data, method, row, class,
# posterior). LDA is fitted on the first 5 rows of each class of two features (so MASS's
# discriminant space is the whole feature space: D = K - 1 = 2) and predicts every row.
#
# Methods: "plugin", "debiased" and "predictive" are MASS's own; "predictive_fixed" is MASS's
# predictive rule with one line corrected. MASS 7.3-58 scales the rows by sqrt(N / (N - K))
# (from the unbiased to the ML covariance) but not the class means it subtracts from them:
#   X <- x * sqrt(N/(N - ng)); dev <- scale(X, center = dm[i, ], scale = FALSE)
# The corrected line scales both. The script checks the correction against the Student-t
# predictive density written out directly (flat prior on the means, |Sigma|^-(D+1)/2).
suppressPackageStartupMessages(library(MASS))
here <- file.path("tests", "references", "mass")
sets <- list(iris = c("x1", "x2"), wine = c("x1", "x2"))

fixed_source <- deparse(MASS:::predict.lda)
line <- "dev <- scale(X, center = dm[i, ], scale = FALSE)"
stopifnot(sum(grepl(line, fixed_source, fixed = TRUE)) == 1)
fixed_source <- sub(line, "dev <- scale(X, center = dm[i, ] * sqrt(N/(N - ng)), scale = FALSE)",
                    fixed_source, fixed = TRUE)
predict_fixed <- eval(parse(text = fixed_source))
environment(predict_fixed) <- asNamespace("MASS")

student_t <- function(x, g, new) {
  N <- nrow(x); K <- nlevels(g); p <- ncol(x)
  W <- Reduce(`+`, lapply(levels(g), function(l) crossprod(scale(x[g == l, ], scale = FALSE))))
  dens <- sapply(levels(g), function(l) {
    nk <- sum(g == l); d <- sweep(new, 2, colMeans(x[g == l, ]))
    q <- rowSums((d %*% solve(W)) * d)
    (nk / (nk + 1))^(p / 2) * (1 + q * nk / (nk + 1))^(-(N - K + 1) / 2) / K
  })
  dens / rowSums(dens)
}

out <- NULL
for (name in names(sets)) {
  table <- read.csv(file.path("tests", "references", "mclust", paste0(name, ".csv")))
  g <- factor(table$class)
  train <- unlist(lapply(levels(g), function(l) which(g == l)[1:5]))
  X <- as.matrix(table[, sets[[name]]])
  fit <- lda(X[train, ], g[train])
  posteriors <- list(
    plugin = predict(fit, X, method = "plug-in")$posterior,
    debiased = predict(fit, X, method = "debiased")$posterior,
    predictive = predict(fit, X, method = "predictive")$posterior,
    predictive_fixed = predict_fixed(fit, X, method = "predictive")$posterior
  )
  stopifnot(isTRUE(all.equal(unname(posteriors$predictive_fixed),
                             unname(student_t(X[train, ], g[train], X)), tolerance = 1e-12)))
  for (method in names(posteriors)) {
    z <- posteriors[[method]]
    out <- rbind(out, data.frame(
      data = name, method = method, row = rep(seq_len(nrow(z)) - 1L, ncol(z)),
      class = rep(seq_len(ncol(z)) - 1L, each = nrow(z)),
      posterior = sprintf("%.17g", as.vector(z))
    ))
  }
  out <- rbind(out, data.frame(data = name, method = "train_rows", row = train - 1L, class = NA,
                               posterior = NA))
}
write.csv(out, file.path(here, "mass_lda_reference.csv"), row.names = FALSE, quote = FALSE,
          na = "")
cat("MASS", as.character(packageVersion("MASS")), "R", R.version.string, "\n")

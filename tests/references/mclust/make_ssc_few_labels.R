# MclustSSC with few labels: standardized wine, 4 labeled rows a class (wine_scaled_few.csv, made
# by export_data.py), one fit per structure, for tests/test_mda_behaves_like_the_others.py.
# Run from the repository root: Rscript tests/references/mclust/make_ssc_few_labels.R
suppressPackageStartupMessages({
  library(mclust)
  library(jsonlite)
})
here <- "tests/references/mclust"
table <- read.csv(file.path(here, "wine_scaled_few.csv"))
X <- as.matrix(table[, grep("^x", names(table))])
class <- table$class
class[class < 0] <- NA
fits <- list()
for (s in mclust.options("emModelNames")) {
  fit <- tryCatch(MclustSSC(X, class, modelNames = s, verbose = FALSE, warn = FALSE),
                  error = function(e) NULL)
  if (is.null(fit) || is.na(fit$loglik)) {
    fits[[s]] <- list(fitted = FALSE)
  } else {
    fits[[s]] <- list(fitted = TRUE, loglik = fit$loglik, df = fit$df,
                      accuracy = mean(fit$classification == as.character(table$truth)))
  }
}
result <- list(mclust_version = as.character(packageVersion("mclust")),
               R_version = R.version.string, labeled_per_class = 4, fits = fits)
writeLines(toJSON(result, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(here, "ssc_few_labels.json"))

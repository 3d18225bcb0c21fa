# mclust's fixed-model cross-validation (cvMclustDA) with its folds recorded (issue 58).
# Run from the repository root (R with mclust >= 6.1.1 and jsonlite):
#   python tests/references/mclust/export_data.py     # iris.csv, wine.csv
#   Rscript tests/references/mclust/make_cv_reference.R
# Writes tests/references/mclust/mclust_cv.json. cvMclustDA draws its folds with its
# (unexported) balancedFolds before any other random number, so the same seed gives the same
# folds here: each case records them as a fold number per row (1-based) and checks them by
# recomputing the folds' models, posteriors, error and Brier score from them.
source(file.path("tests", "references", "mclust", "common.R"))

# cvMclustDA's folds are balanced over the labels as a factor
sets <- lapply(list(iris = read_set("iris"), wine = read_set("wine")),
               function(data) modifyList(data, list(y = factor(data$y))))

cv_case <- function(data, seed, nfold = 10, ...) {
  fit <- MclustDA(data$X, data$y, verbose = FALSE, ...)
  set.seed(seed)
  folds <- mclust:::balancedFolds(data$y, nfolds = nfold)
  set.seed(seed)
  cv <- cvMclustDA(fit, nfold = nfold, verbose = FALSE)
  fold_id <- integer(length(data$y))
  for (i in seq_along(folds)) fold_id[folds[[i]]] <- i
  # the same numbers from the recorded folds: the model fixed, the full fit's proportions
  G <- lapply(fit$models, function(m) m$G)
  names <- lapply(fit$models, function(m) m$modelName)
  z <- matrix(NA_real_, length(data$y), nlevels(data$y))
  for (i in seq_along(folds)) {
    test <- folds[[i]]
    m <- MclustDA(data$X[-test, , drop = FALSE], data$y[-test], G = G, modelNames = names,
                  modelType = fit$type, verbose = FALSE)
    z[test, ] <- predict(m, data$X[test, , drop = FALSE], prop = fit$prop)$z
  }
  stopifnot(isTRUE(all.equal(unname(z), unname(cv$z), tolerance = 1e-12)))
  list(
    type = fit$type, seed = seed, nfold = nfold,
    structure = unname(unlist(names)), G = unname(unlist(G)),
    loglik = fit$loglik, bic = fit$bic, prop = unname(fit$prop),
    fold = fold_id,
    error = cv$ce, error_se = cv$se.ce, brier = cv$brier, brier_se = cv$se.brier,
    z = unname(cv$z), classification = as.integer(as.character(cv$classification))
  )
}

out <- list(
  mclust_version = as.character(packageVersion("mclust")),
  iris_edda = cv_case(sets$iris, 1, modelType = "EDDA"),
  iris_mclustda = cv_case(sets$iris, 2, G = 1:3),
  wine_mclustda = cv_case(sets$wine, 3)
)
write_json(out, file.path(here, "mclust_cv.json"), digits = NA, auto_unbox = TRUE, pretty = FALSE)

# Reference fits of R's mclust for tests/test_mclust_structures.py.
# Run from the repository root (needs R with mclust >= 6.1.1 and jsonlite):
#   python tests/references/mclust/export_data.py   # iris.csv, wine.csv: the exact matrices
#   Rscript tests/references/mclust/make_mclust_reference.R
# Writes tests/references/mclust/mclust_reference.json. mclust's sign: bic = 2 loglik - df log n
# (larger is better); loglik is the mixture log-likelihood sum_i log sum_k prop_k f_k(x_i).
source(file.path("tests", "references", "mclust", "common.R"))
structures <- mclust.options("emModelNames")

posterior <- function(fit, X) unname(predict(fit, X)$z)

edda <- function(data) {
  out <- list()
  for (s in structures) {
    fit <- MclustDA(data$X, data$y, modelType = "EDDA", modelNames = s, verbose = FALSE)
    if (is.null(fit)) next
    out[[s]] <- list(
      loglik = fit$loglik, df = fit$df, bic = fit$bic,
      z = posterior(fit, data$X),
      means = unname(sapply(fit$models, function(m) m$parameters$mean)),
      sigma = lapply(fit$models, function(m) unname(m$parameters$variance$sigma[, , 1]))
    )
  }
  out
}

mclustda <- function(data) {
  fit <- MclustDA(data$X, data$y, modelType = "MclustDA", G = 1:3, verbose = FALSE)
  classes <- lapply(fit$models, function(m) list(
    modelName = m$modelName, G = m$G, loglik = m$loglik, bic = m$bic,
    BIC = unclass(m$BIC)[, , drop = FALSE], BIC_rows = rownames(m$BIC),
    BIC_columns = colnames(m$BIC),
    pro = unname(m$parameters$pro), means = unname(m$parameters$mean)
  ))
  list(loglik = fit$loglik, df = fit$df, bic = fit$bic, classes = unname(classes),
       z = posterior(fit, data$X))
}

mclustssc <- function(data) {
  # labels of every second row hidden (rows 2, 4, ... in R, 1, 3, ... from 0 in Python)
  class <- data$y
  class[seq(2, length(class), by = 2)] <- NA
  fit <- MclustSSC(data$X, class, verbose = FALSE)
  list(hidden = "every second row, starting with the second", modelName = fit$modelName,
       G = fit$G, loglik = fit$loglik, df = fit$df, bic = fit$bic,
       BIC = unname(fit$BIC[1, ]), BIC_columns = colnames(fit$BIC),
       z = unname(fit$z), pro = unname(fit$parameters$pro),
       means = unname(fit$parameters$mean))
}

result <- list(
  mclust_version = as.character(packageVersion("mclust")),
  R_version = R.version.string,
  sign = "mclust: bic = 2 loglik - df log n (larger is better)",
  iris = list(edda = edda(read_set("iris")), mclustda = mclustda(read_set("iris")),
              mclustssc = mclustssc(read_set("iris"))),
  wine = list(edda = edda(read_set("wine")))
)
writeLines(toJSON(result, digits = NA, auto_unbox = TRUE, matrix = "rowmajor", null = "null"),
           file.path(here, "mclust_reference.json"))

# mclust references for priors, hierarchical starts, model choice and speed (issue 58).
# Run from the repository root (needs R with mclust >= 6.1.1 and jsonlite):
#   python tests/references/mclust/export_data.py     # iris.csv, wine.csv
#   python tests/references/mclust/export_digits.py   # digits_pca10.csv
#   Rscript tests/references/mclust/make_mclust_priors.R
# Writes tests/references/mclust/mclust_priors.json. mclust's sign: bic = 2 loglik - df log n
# (larger is better). Under a prior, loglik is still the mixture log-likelihood
# sum_i log sum_k prop_k f_k(x_i) at the MAP parameters (no log-prior term), as mclust reports it.
# Classes are the csv's labels (0, 1, 2, ...): "wine class 2" is the rows whose label is 2.
source(file.path("tests", "references", "mclust", "common.R"))
structures <- mclust.options("emModelNames")
iris <- read_set("iris")
wine <- read_set("wine")
digits <- read_set("digits_pca10")

posterior <- function(fit, X) unname(predict(fit, X)$z)
accuracy <- function(fit, data) mean(predict(fit, data$X)$classification == as.character(data$y))
hyper <- function(p) list(shrinkage = p$shrinkage, mean = unname(p$mean), dof = p$dof,
                          scale = unname(p$scale))

# (a) EDDA with mclust's default prior, each structure. EDDA is one M-step on all rows with the
# class indicators as z, so defaultPrior is built once from all rows with G = number of classes
# (shared by the classes), not from each class's rows. A structure mclust fails on is recorded
# as fitted = false with its error message (mclust has a prior for 10 of the 14 structures only:
# not VEE, EVE, VVE, EVV; see ?defaultPrior).
edda_prior <- function(data) {
  out <- list()
  ncl <- length(unique(data$y))
  for (s in structures) {
    fit <- tryCatch(MclustDA(data$X, data$y, modelType = "EDDA", modelNames = s,
                             prior = priorControl(), verbose = FALSE),
                    error = function(e) conditionMessage(e))
    if (is.null(fit) || is.character(fit)) {
      out[[s]] <- list(fitted = FALSE, error = if (is.character(fit)) fit else "NULL fit")
      next
    }
    out[[s]] <- list(
      fitted = TRUE, loglik = fit$loglik, df = fit$df, bic = fit$bic, accuracy = accuracy(fit, data),
      z = posterior(fit, data$X),
      means = unname(sapply(fit$models, function(m) m$parameters$mean)),
      sigma = lapply(fit$models, function(m) unname(m$parameters$variance$sigma[, , 1])),
      prior = hyper(defaultPrior(data$X, G = ncl, modelName = s))
    )
  }
  out
}

# (b) MclustDA over the 14 structures x G 1:5 (mclust's defaults), with and without the prior.
# For each class: the chosen structure and G (mclust names a one-component model XII, XXI or
# XXX), its loglik (at the MAP parameters under the prior, without the log-prior), df (with the
# G - 1 proportions), bic = 2 loglik - df log n_class (the best entry of its BIC table) and BIC
# table (rows G, columns structures, null where mclust could not fit), and under the prior the
# class's defaultPrior hyperparameters for the chosen model (from the class's rows with that G).
# The whole: loglik = sum_i log sum_k prop_k f_k(x_i), df = sum of the classes' df + K - 1.
mclustda <- function(data, prior = NULL) {
  fit <- MclustDA(data$X, data$y, prior = prior, verbose = FALSE)
  labels <- names(fit$models)
  classes <- lapply(labels, function(k) {
    m <- fit$models[[k]]
    rows <- data$y == as.numeric(k)
    out <- list(class = as.numeric(k), n = m$n, modelName = m$modelName, G = m$G,
                loglik = m$loglik, df = nMclustParams(m$modelName, m$d, m$G),
                bic = max(m$BIC, na.rm = TRUE),
                BIC = unname(unclass(m$BIC)[, , drop = FALSE]),
                BIC_rows = as.numeric(rownames(m$BIC)), BIC_columns = colnames(m$BIC))
    if (!is.null(prior))
      out$prior <- hyper(defaultPrior(data$X[rows, , drop = FALSE], G = m$G,
                                      modelName = m$modelName))
    out
  })
  summ <- summary(fit)
  list(loglik = fit$loglik, df = fit$df, bic = fit$bic, accuracy = accuracy(fit, data),
       brier = summ$brier, classes = classes)
}

# (c) one class alone: Mclust with G = 3, VEI (labels 1 and 2, so either reading of "class 2")
alone <- function(data, label) {
  fit <- Mclust(data$X[data$y == label, ], G = 3, modelNames = "VEI", verbose = FALSE)
  list(class = label, n = fit$n, loglik = fit$loglik, df = fit$df, bic = fit$bic,
       pro = unname(fit$parameters$pro))
}

# (d) mclust's hierarchical start as Mclust / MclustDA call it: hc(X, modelName =
# mclust.options("hcModelName"), use = mclust.options("hcUse")). With use "SVD", hc works on
# Z = scale(X) %*% V %*% diag(1 / sqrt(d)) (svd(scale(X)) = U diag(d) V', scale with sd of n - 1),
# starting from singletons 1:n (hc's default partition = dupPartition(data) is not passed on to
# hcVVV, which starts from 1:n; iris's duplicated rows 102 and 143 are simply the first merge);
# hcVVV's alpha = traceW(Z / sqrt(n p)) (sum of squared deviations from the column means), beta
# = 1. merges: one row per merge (n - 1 rows), the two group labels merged (hclass keeps the
# smaller). partitions[[g]]: hclass(hc, 1:5)[, g], each row's group, labelled 1..g in order of
# first appearance. Also the bare call hc(X)
# (formal defaults modelName "VVV", use "VARS": the raw data), which is not what Mclust uses.
hier <- function(X) {
  X <- unname(X)
  h <- hc(X, modelName = mclust.options("hcModelName"), use = mclust.options("hcUse"))
  Z <- attr(h, "data")
  Xs <- scale(X, center = TRUE, scale = TRUE)
  n <- nrow(Z)
  p <- ncol(Z)
  cl <- hclass(h, 1:5)
  bare <- hc(X)
  cl_bare <- hclass(bare, 1:5)
  list(n = n, p = p, modelName = attr(h, "modelName"), use = attr(h, "use"),
       center = unname(attr(Xs, "scaled:center")), scale = unname(attr(Xs, "scaled:scale")),
       singular_values = svd(Xs, nu = 0)$d,
       transformed_first5 = unname(Z[1:5, , drop = FALSE]),
       alpha = max(mclust:::traceW(Z / sqrt(n * p)), .Machine$double.eps),
       initial_partition = as.integer(attr(h, "initialPartition")),
       merges = unname(t(unclass(h))[, 1:2]),
       partitions = lapply(1:5, function(g) as.integer(cl[, g])),
       bare_hc = list(modelName = attr(bare, "modelName"), use = attr(bare, "use"),
                      merges = unname(t(unclass(bare))[, 1:2]),
                      partitions = lapply(1:5, function(g) as.integer(cl_bare[, g]))))
}

# (e) elapsed seconds of system.time, median of 3 runs
timed <- function(f) {
  times <- sapply(1:3, function(i) system.time(f())[["elapsed"]])
  list(median = median(times), runs = times)
}
timings <- list(
  iris_mclustda_G1_3 = timed(function() MclustDA(iris$X, iris$y, G = 1:3, verbose = FALSE)),
  wine_edda_14 = timed(function() for (s in structures)
    MclustDA(wine$X, wine$y, modelType = "EDDA", modelNames = s, verbose = FALSE)),
  digits_pca10_mclustda_G1_3 = timed(function() MclustDA(digits$X, digits$y, G = 1:3,
                                                          verbose = FALSE))
)

load <- tryCatch(readLines("/proc/loadavg"), error = function(e) NA)
result <- list(
  mclust_version = as.character(packageVersion("mclust")),
  R_version = R.version.string,
  sign = "mclust: bic = 2 loglik - df log n (larger is better)",
  options = list(hcModelName = mclust.options("hcModelName"), hcUse = mclust.options("hcUse"),
                 emModelNames = structures),
  edda_prior = list(iris = edda_prior(iris), wine = edda_prior(wine)),
  wine_mclustda = list(none = mclustda(wine), prior = mclustda(wine, priorControl())),
  wine_class_alone_VEI_G3 = list(alone(wine, 1), alone(wine, 2)),
  hc = list(iris = hier(iris$X), wine_class1 = hier(wine$X[wine$y == 1, ])),
  timings = c(timings, list(unit = "seconds elapsed, median of 3 runs",
                            machine = list(cores = parallel::detectCores(), loadavg = load)))
)
writeLines(toJSON(result, digits = NA, auto_unbox = TRUE, matrix = "rowmajor", null = "null",
                  na = "null"),
           file.path(here, "mclust_priors.json"))

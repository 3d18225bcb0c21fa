# mclust's banknote data and its MclustDA fit (issue 58: "iris and banknote unchanged").
# Run from the repository root (R with mclust >= 6.1.1 and jsonlite):
#   Rscript tests/references/mclust/make_banknote_reference.R
# Writes banknote.csv (mclust's data set: 6 measurements of 200 Swiss banknotes, class 0 =
# counterfeit, 1 = genuine) and banknote_mclustda.json. mclust's sign: bic = 2 loglik - df log n.
source(file.path("tests", "references", "mclust", "common.R"))
data(banknote, package = "mclust")
X <- as.matrix(banknote[, -1])
y <- as.integer(banknote$Status == "genuine")
write.csv(data.frame(X, class = y), file.path(here, "banknote.csv"), row.names = FALSE)
# read back what the tests read, so that both fit the same numbers
table <- read.csv(file.path(here, "banknote.csv"))
X <- as.matrix(table[, setdiff(names(table), "class")])
y <- table$class

fit <- MclustDA(X, y, verbose = FALSE)  # 14 structures x G 1:5 per class, mclust's defaults
classes <- lapply(names(fit$models), function(k) {
  m <- fit$models[[k]]
  list(class = as.numeric(k), n = m$n, modelName = m$modelName, G = m$G, loglik = m$loglik,
       df = nMclustParams(m$modelName, m$d, m$G), bic = max(m$BIC, na.rm = TRUE),
       BIC = unname(unclass(m$BIC)[, , drop = FALSE]),
       BIC_rows = as.numeric(rownames(m$BIC)), BIC_columns = colnames(m$BIC))
})
accuracy <- mean(predict(fit, X)$classification == as.character(y))
out <- list(mclust_version = as.character(packageVersion("mclust")),
            R_version = R.version.string, sign = "bic = 2 loglik - df log n (larger is better)",
            loglik = fit$loglik, df = fit$df, bic = fit$bic, accuracy = accuracy,
            brier = summary(fit)$brier, z = unname(predict(fit, X)$z), classes = classes)
write_json(out, file.path(here, "banknote_mclustda.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE, na = "string")

# What every mclust reference script starts with: mclust and jsonlite loaded, mclust's version
# checked (>= 6.1.1: its df counts the K - 1 class proportions), where the files live, and the
# reader of the data sets that export_data.py and export_digits.py wrote.
# Sourced from the repository root: source(file.path("tests", "references", "mclust", "common.R"))
suppressPackageStartupMessages({
  library(mclust)
  library(jsonlite)
})
stopifnot(packageVersion("mclust") >= "6.1.1")
here <- file.path("tests", "references", "mclust")

# the features as a matrix and the csv's class labels (0, 1, 2, ...) of tests/references/mclust/NAME.csv
read_set <- function(name) {
  table <- read.csv(file.path(here, paste0(name, ".csv")))
  list(X = as.matrix(table[, setdiff(names(table), "class")]), y = table$class)
}

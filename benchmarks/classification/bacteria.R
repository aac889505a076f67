#!/usr/bin/env Rscript
# Writes bacteria.csv beside this script: MASS's bacteria data (Menzies,
# 1992, via Venables and Ripley, Modern Applied Statistics with S), the
# presence of H. influenzae in 50 children with otitis media at weeks 0,
# 2, 4, 6 and 11 of a randomised trial of an active drug (placebo, drug,
# drug with encouragement), 220 tests with some visits missed.
# Columns: id (the child, X01..X50), week, y (1: H. influenzae present),
# ap (1: active drug), hilo (1: low compliance), trt (placebo, drug,
# drug+). Debian: apt-get install r-cran-mass.   Run:  Rscript bacteria.R
library(MASS)
args <- commandArgs(trailingOnly = FALSE)
file <- sub("^--file=", "", args[grep("^--file=", args)])
here <- if (length(file)) dirname(normalizePath(file)) else "."
d <- data.frame(id = as.character(bacteria$ID), week = bacteria$week,
                y = as.integer(bacteria$y == "y"), ap = as.integer(bacteria$ap == "a"),
                hilo = as.integer(bacteria$hilo == "lo"), trt = as.character(bacteria$trt))
write.csv(d, file.path(here, "bacteria.csv"), row.names = FALSE, quote = FALSE)

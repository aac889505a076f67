# Writes nlme's Quinidine and Phenobarb data sets (Debian: r-cran-nlme) as
# plain CSV into data/, for train.py. Run: Rscript benchmarks/clinical/export.R DIR
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) > 0) args[1] else "data"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
suppressMessages(library(nlme))
q <- as.data.frame(Quinidine)
q$Subject <- as.character(q$Subject)
for (v in c("Race", "Smoke", "Ethanol", "Heart", "Creatinine")) q[[v]] <- as.integer(q[[v]]) - 1L
write.csv(q, file.path(out, "quinidine_raw.csv"), row.names = FALSE, na = "")
p <- as.data.frame(Phenobarb)
p$Subject <- as.character(p$Subject)
p$Apgar <- as.integer(as.character(p$Apgar))
p$ApgarInd <- as.integer(p$ApgarInd) - 1L
write.csv(p, file.path(out, "phenobarb_raw.csv"), row.names = FALSE, na = "")

#!/usr/bin/Rscript
# Builds train.csv and test.csv for the ChickWeight example from the copy of
# the data set that Debian's r-base-core ships (R's datasets package,
# /usr/lib/R/library/datasets/data/Rdata.rdb). No download.
#
# Run (from anywhere; writes beside this script):
#     Rscript prepare.R            (needs: apt-get install r-base-core)
#
# Long format, one row per (chick, weighing) with a next weighing:
#   id      chick number (1..50, R's Chick factor label)
#   t       weighing number, 1 = birth (day 0)
#   day     days since birth of this weighing (0, 2, ..., 20)
#   weight  body weight at this weighing (g)
#   diet1..diet4  one-hot protein diet
#   y       body weight at the NEXT weighing (g): a one-step-ahead forecast
# The last weighing of each chick has no next weighing, so that row is
# dropped: a chick weighed k times contributes k-1 rows.
#
# Split: sequences (chicks), not rows, stratified by diet: in each diet
# round(n_diet / 4) chicks are drawn for test.csv with a fixed seed; the rest
# go to train.csv. Re-running rewrites byte-identical files.

seed <- 20200713L

args <- commandArgs(trailingOnly = FALSE)
file_arg <- sub("^--file=", "", args[grep("^--file=", args)])
here <- if (length(file_arg) == 1) dirname(normalizePath(file_arg)) else getwd()

cw <- as.data.frame(datasets::ChickWeight)
cw$Chick <- as.integer(as.character(cw$Chick))
cw$Diet <- as.integer(as.character(cw$Diet))
cw <- cw[order(cw$Chick, cw$Time), ]
stopifnot(nrow(cw) == 578L, length(unique(cw$Chick)) == 50L)

rows <- list()
for (ch in sort(unique(cw$Chick))) {
  s <- cw[cw$Chick == ch, ]
  k <- nrow(s)
  if (k < 2) next
  stopifnot(all(s$Time == c(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 21)[seq_len(k)]))
  i <- seq_len(k - 1)
  rows[[length(rows) + 1]] <- data.frame(
    id = ch, t = i, day = s$Time[i], weight = s$weight[i],
    diet1 = as.integer(s$Diet[i] == 1), diet2 = as.integer(s$Diet[i] == 2),
    diet3 = as.integer(s$Diet[i] == 3), diet4 = as.integer(s$Diet[i] == 4),
    y = s$weight[i + 1])
}
long <- do.call(rbind, rows)

set.seed(seed, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
diet_of <- cw$Diet[!duplicated(cw$Chick)]
names(diet_of) <- cw$Chick[!duplicated(cw$Chick)]
test_ids <- integer(0)
for (dt in 1:4) {
  ids <- sort(as.integer(names(diet_of)[diet_of == dt]))
  test_ids <- c(test_ids, ids[sample.int(length(ids), round(length(ids) / 4))])
}
test_ids <- sort(test_ids)

write_long <- function(df, name) {
  write.table(df, file.path(here, name), sep = ",", row.names = FALSE,
              quote = FALSE, eol = "\n")
}
tr <- long[!(long$id %in% test_ids), ]
te <- long[long$id %in% test_ids, ]
write_long(tr, "train.csv")
write_long(te, "test.csv")

cat(sprintf("ChickWeight from R %s datasets: %d chicks, %d weighings -> %d rows with a next weighing\n",
            getRversion(), length(unique(cw$Chick)), nrow(cw), nrow(long)))
cat(sprintf("train: %d chicks, %d rows; test: %d chicks, %d rows (seed %d)\n",
            length(unique(tr$id)), nrow(tr), length(unique(te$id)), nrow(te), seed))
cat("test chicks:", test_ids, "\n")
cat("test chicks per diet:", tapply(test_ids, diet_of[as.character(test_ids)], length), "\n")
cat("rows per chick (train):", paste(names(table(table(tr$id))), table(table(tr$id)), sep = "x", collapse = " "), "\n")
cat("rows per chick (test):", paste(names(table(table(te$id))), table(table(te$id)), sep = "x", collapse = " "), "\n")
cat(sprintf("train weight: mean %.4f sd %.4f; day: mean %.4f sd %.4f; y: mean %.4f sd %.4f\n",
            mean(tr$weight), sd(tr$weight), mean(tr$day), sd(tr$day), mean(tr$y), sd(tr$y)))

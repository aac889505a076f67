// Package blocks reads training and test data as sequences and builds the
// block schemes of the blockwise jackknife+ (docs/design.md, sections 1, 3 and
// 5).
//
// Read and ReadFile turn a CSV file in long format into a Dataset; NewScheme
// cuts a training Dataset into blocks of loss terms, each deleted together
// and each with an evaluation region for its residuals. The package depends
// only on the standard library; it knows nothing of models, gradients or
// reports.
//
// # Data
//
// A Dataset holds the sequences of one file in the order in which their ids
// first appear, and the names of its d feature columns and its target
// columns. A Sequence holds its rows sorted by step: row t (0-based) is the
// row with the t-th smallest step value. Rows are what blocks, horizons and
// shifts count in; the step values only order the rows, and may be
// non-consecutive integers or decimals. X[t] holds row t's features, Y[t]
// its targets; Y[t] is nil when row t has no target, and Y is nil for a
// dataset without target columns (a test file without labels). All values
// are finite.
//
// # CSV format
//
// One row per (sequence, step): an id column, a step column, feature
// columns and target columns, in any order and with rows in any order.
// Options names the columns; by default they are id, t and y, and every
// other column is a feature in file order. The first line is the header.
//
// The separator is the comma, and only the comma: a file whose header is
// a single field holding a semicolon, tab or bar is reported as using
// another separator. Quoted fields (RFC 4180, with "" for a quote), CRLF
// line ends, a UTF-8 byte order mark, blank lines and spaces around
// values are accepted. Ids are text, compared as written after trimming
// spaces, so "7" and "07" are two sequences. Numbers are read with
// strconv.ParseFloat: 3, -2.5, 1e-3. Empty target cells mean "no label
// here": the row has no target (Y[t] is nil), so it has no loss term,
// residual or coverage count, and a many-to-one model's file needs
// labels only on the rows its outputs forecast; a row has a value in
// every target column or in none. Any other empty cell, a missing-value
// marker in any cell (NaN, NA, N/A, null, none, ?, - or ., in any case)
// and infinite values are errors: rnnaudit does not impute. Steps must be
// unique within a sequence (3 and 3.0 are the same step).
//
// Options.Shift takes the target of row t from row t+Shift of the same
// sequence: with Shift = 1, a file whose row t holds the value y observed at
// step t gives a model that forecasts the next value, and y may then also
// be a feature. The last Shift rows of each sequence (the first -Shift rows
// for a negative Shift) are left without a target, and so is a row whose
// target row has empty target cells.
//
// # Errors
//
// Any bytes give a Dataset or an error, never a panic. Read reports every
// problem of a file in one error, up to Options.MaxErrors (10 by default),
// so that the user fixes them in one go: the first problem of each row,
// problems with the header (all of them), and duplicate steps. Past that
// limit it counts the further lines of a problem it lists (the same
// column and message, DataError.More) and stops at any other. Each
// problem is a *DataError naming the file, the line (1-based, the header
// being line 1 when the file starts with it), the column, what is wrong and
// what to do; several come as an ErrorList in line order. Each wraps a
// sentinel (ErrSyntax, ErrColumn, ErrMissing, ErrNumber, ...) for
// errors.Is, and CSV syntax errors also wrap the *csv.ParseError of
// encoding/csv. When a field of Options fixes the problem, the DataError
// lists it in Options (OptFeatures, ...) and the message ends with it, as
// in "choose the feature columns (Options.Features)"; DataError.Text names
// the options in a program's own terms, such as its flags.
//
// CheckFeatures compares the feature columns with the number of inputs
// the model takes, and CheckCompatible compares a test file's columns
// with the training file's.
//
// # Blocks
//
// Loss term (i, t, h) is the forecast made at row t of sequence i for
// horizon h, compared with the target of row t+h (docs/design.md, section 1.1;
// h = 0 for a model with one output per step, and a many-to-one model has
// the single term (i, T_i-1, 0)). The schemes (docs/design.md, section 3):
//
//   - Sequences: block i holds every term of sequence i; n blocks.
//   - Intervals of length K: block j holds the terms whose target row
//     t+h is in [jK, (j+1)K), in every sequence; ceil(Tmax/K) blocks,
//     Tmax the longest sequence. In 1-based words, steps jK+1 to
//     (j+1)K.
//   - Nested: block (i, j) deletes the union of sequence i and interval j;
//     its evaluation region is their intersection, the rows of interval j
//     in sequence i.
//   - Windows: over the sliding windows of long series (CutWindows:
//     stride 1, each window a sequence), block (s, j) has in its
//     evaluation region the windows of series s whose last row read is in
//     the stretch [jK, (j+1)K) of its rows, and deletes every window that
//     uses a row of the stretch, a target row included (Künsch's block
//     jackknife over windows). WindowBlockLength chooses K from the
//     residuals' autocorrelation, at least the window length.
//
// For sequence and interval blocks the evaluation region is the deleted
// set itself. Block.Deletes and Block.InRegion answer for one term;
// Block.Deleted and Block.Region list the rows as one Span per sequence,
// for loops.
//
// Interval membership is decided by the target row r = t+h, not by the
// row t at which the forecast is made. Deleting an interval of the training
// data means deleting the observations of its rows, and the observation of
// row r enters the loss only as the target of the terms (r-h, h), one per
// horizon. Deciding by t would keep a term (t, h) with t before the
// interval and t+h inside it, which still fits a deleted value, and would
// delete terms that fit values after the interval: the leave-one-block-out
// model would have been fitted to part of the data its residuals are taken
// on. Deciding by t+h, every residual of the evaluation region is taken
// against a value the model was not fitted to. (Deletion only sets loss
// weights to zero; the inputs still flow through the recurrence,
// docs/design.md, section 2.2.) With one output per step (h = 0) the two rules
// coincide.
//
// Rows without a target have no terms. NewScheme leaves out blocks whose
// evaluation region holds no target, and says so in Scheme.Notes. When
// fewer than two intervals hold a target (always so when K >= Tmax) one
// interval block would delete everything: the interval and nested schemes
// are then degenerate and NewScheme uses sequence blocks, with
// Scheme.Degenerate set and a note for the report.
package blocks

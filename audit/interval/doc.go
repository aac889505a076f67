// Package interval is the arithmetic of prediction intervals over plain
// values: the quantile rules that turn m residuals into limits (the
// ranks ceil((1-alpha)(m+1)) and floor(alpha(m+1))), jackknife+ limits
// from the perturbed predictions' residual sets, and a selection that does
// not sort. It knows nothing of models, data sets or the audit's options:
// the audit package gathers the values and calls it.
package interval

package hvp

import "github.com/rnnaudit/rnnaudit/internal/errs"

// This file: the options an error of this package names as its fix.

// Option names a field of Options (or LowRankOptions) that fixes a
// problem: an *OptionError lists them, so that a program can name them in
// its own terms. It is the module's one option type (blocks.Option,
// audit.Option).
type Option = errs.Option

// OptionError is a problem that changing options fixes, such as a damped
// curvature that is not positive definite (which more Options.Damping
// fixes). Its message ends with the options' Go names in parentheses.
type OptionError = errs.OptionError

// The fields of Options and LowRankOptions that an *OptionError may name.
const (
	OptCurvature Option = "hvp.Options.Curvature"
	OptDamping   Option = "hvp.Options.Damping"
	OptScale     Option = "hvp.Options.Scale"
	OptSubsample Option = "hvp.LowRankOptions.Subsample"
)

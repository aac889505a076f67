package audit

import (
	"fmt"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// Pooling says which leave-one-block-out residuals form the sets V± of a
// forecast (docs/design.md, section 5.2).
type Pooling string

// Poolings.
const (
	// PoolAuto chooses PoolRows for interval and nested blocks over fewer
	// than 2 ceil(1/alpha) training sequences (20 at alpha 0.1), else
	// PoolPosition.
	PoolAuto Pooling = "auto"
	// PoolPosition pairs a forecast with the residuals of the training
	// forecasts at its own row and horizon (docs/design.md, section 5.2): one
	// per training sequence per row, so a row needs at least ceil(1/alpha) - 1
	// training sequences for a bounded interval.
	PoolPosition Pooling = "position"
	// PoolRows pairs a forecast made at row Warmup or later with every
	// leave-one-block-out residual of its horizon at rows Warmup and
	// later, of every block (Künsch's block jackknife for one stationary
	// series: the residuals of a block are taken where it was left out,
	// wherever that is in the series). Forecasts of earlier rows keep the
	// residuals of their position: the recurrent state has not forgotten
	// its start there. One long series then gives as many residuals as
	// it has rows.
	PoolRows Pooling = "rows"
)

// ParsePooling returns the pooling named s: "auto" (or ""), "position"
// or "rows".
func ParsePooling(s string) (Pooling, error) {
	switch Pooling(s) {
	case "", PoolAuto:
		return PoolAuto, nil
	case PoolPosition, PoolRows:
		return Pooling(s), nil
	}
	return "", fmt.Errorf("audit: unknown pooling %q: choose auto, position or rows", s)
}

// poolSequences is the number of training sequences below which PoolAuto
// pools across rows with interval or nested blocks: 2 ceil(1/alpha) (20
// at alpha 0.1). With fewer, a row's residuals (one per sequence) are
// too few for a bounded interval or put its limit on the largest one or
// two of them.
func poolSequences(alpha float64) int {
	return 2 * (interval.MinResiduals(alpha) + 1)
}

// resolvePooling decides the pooling of an audit and its warm-up rows
// from o (Pooling, Warmup), the scheme in use and the training data, and
// returns the note that says which pooling ran and why.
func resolvePooling(o *Options, s *blocks.Scheme, train *blocks.Dataset) (Pooling, int, string) {
	pool := o.Pooling
	why := "chosen"
	if pool == "" || pool == PoolAuto {
		pool, why = PoolPosition, ""
		if s.Kind != blocks.Sequences && train.Len() < poolSequences(o.Alpha) {
			pool = PoolRows
			why = fmt.Sprintf("%s blocks over %d training sequence(s), fewer than %d", s.Kind, train.Len(), poolSequences(o.Alpha))
		}
	}
	if pool == PoolPosition {
		if why == "" {
			return pool, 0, ""
		}
		return pool, 0, "Residuals are pooled by position (chosen): a forecast at row t gets the leave-one-block-out residuals of the training forecasts at row t."
	}
	warm := o.Warmup
	switch {
	case warm == 0 && s.Kind != blocks.Sequences:
		warm = s.K
	case warm < 0:
		warm = 0
	}
	note := fmt.Sprintf("Residuals are pooled across rows (%s): a forecast made at row %d or later gets every leave-one-block-out residual of its horizon from row %d on (Künsch's block jackknife); the first %d rows are a warm-up of the recurrent state and keep the residuals of their own row.",
		why, warm+1, warm+1, warm)
	if warm == 0 {
		note = fmt.Sprintf("Residuals are pooled across rows (%s): every forecast gets every leave-one-block-out residual of its horizon (Künsch's block jackknife), with no warm-up.", why)
	}
	return PoolRows, warm, note
}

// residualSets gives each evaluated point its residual entries and the
// entries a self-audit leaves out: by position (docs/design.md, section 5.2),
// or pooled across rows from warmup on (PoolRows).
type residualSets struct {
	byF    map[forecast][]interval.Residual
	warmup int
	pooled map[int][]interval.Residual // by horizon; nil: by position
	// own is the block whose evaluation region holds a point of the
	// training set (pooled or windowed self-audits).
	own func(pt point) int
}

// noSkip leaves out nothing.
var noSkip = interval.Skip{Seq: -1, Blk: -1}

// byPosition is the residual sets of docs/design.md, section 5.2: by forecast.
func byPosition(m map[forecast][]interval.Residual) *residualSets {
	return &residualSets{byF: m}
}

// at returns the entries of point pt and what its interval leaves out:
// in a self-audit (self) by position (and in the warm-up rows) its own
// sequence's entries, pooled or a window the entries of its own block
// (the windows around it, whose residuals share its rows).
func (r *residualSets) at(pt point, self bool) ([]interval.Residual, interval.Skip) {
	es, pooled := r.byF[pt.f], r.pooled != nil && pt.f.T >= r.warmup
	if pooled {
		es = r.pooled[pt.f.H]
	}
	switch {
	case !self:
		return es, noSkip
	case r.own != nil && (pooled || r.pooled == nil):
		return es, interval.Skip{Seq: -1, Blk: r.own(pt)}
	}
	return es, interval.Skip{Seq: pt.seq, Blk: -1}
}

// sets returns the residual sets of the leave-one-block-out residuals
// byF under p's pooling (p.opt.Pooling, resolved by prepare).
func (p *problem) sets(byF map[forecast][]interval.Residual) *residualSets {
	r := byPosition(byF)
	if p.self && p.scheme != nil && p.scheme.Kind == blocks.Windows {
		of := p.scheme.RegionOf()
		r.own = func(pt point) int { return of(pt.seq, pt.f.T) }
	}
	if p.opt.Pooling != PoolRows {
		return r
	}
	r.warmup = p.opt.Warmup
	r.pooled = map[int][]interval.Residual{}
	for _, f := range sortedForecasts(byF) {
		if f.T >= r.warmup {
			r.pooled[f.H] = append(r.pooled[f.H], byF[f]...)
		}
	}
	for h, es := range r.pooled {
		r.pooled[h] = slices.Clip(es)
	}
	if p.self && p.scheme != nil {
		of := p.scheme.RegionOf()
		r.own = func(pt point) int { return of(pt.seq, pt.f.T+pt.f.H) }
	}
	return r
}

// poolKey returns the forecast whose residuals a forecast f shares under
// the pooling of o (PoolRows: every forecast of a horizon from row Warmup
// on shares those of row Warmup), or nil by position.
func (o *Options) poolKey() func(forecast) forecast {
	if o.Pooling != PoolRows {
		return nil
	}
	warm := o.Warmup
	return func(f forecast) forecast {
		if f.T >= warm {
			return forecast{T: warm, H: f.H}
		}
		return f
	}
}

// pooledValues gathers the values of m by key(forecast), in the order of
// the forecasts (row, then horizon).
func pooledValues(m map[forecast][]float64, key func(forecast) forecast) map[forecast][]float64 {
	out := make(map[forecast][]float64, len(m))
	for _, f := range sortedForecasts(m) {
		k := key(f)
		out[k] = append(out[k], m[f]...)
	}
	return out
}

// evalOrNil is the evaluated set, or nil in a self-audit.
func (p *problem) evalOrNil() *blocks.Dataset {
	if p.self {
		return nil
	}
	return p.eval
}

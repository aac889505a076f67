package audit

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/krylov"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/internal/num"
)

// newtonKrylov is newtonStep for a block with many terms, without the
// m × m leverage matrix: the same blockStep from the block's terms ts,
// Jacobian rows J, rows AJ = A J^T and infinitesimal step u, with the
// leverage system solved by the Lanczos process (krylov.Solve). It never
// fails.
func newtonKrylov(loss hvp.Loss, ts []ownTerm, J, AJ [][]float64, u []float64) blockStep {
	m := len(ts)
	st := blockStep{delta: u, res: make([]float64, m), shift: make([]float64, m), lev: make([]float64, m)}
	sl := make([]float64, m)
	v := make([]float64, m)
	b := make([]float64, m)
	for a, t := range ts {
		sl[a] = math.Sqrt(t.w * loss.SecondDerivative(t.y, t.fx))
		v[a] = num.Dot(J[a], u)
		b[a] = sl[a] * v[a]
		st.lev[a] = sl[a] * sl[a] * num.Dot(J[a], AJ[a])
		if math.IsNaN(st.lev[a]) || math.IsInf(st.lev[a], 0) || math.IsNaN(b[a]) || math.IsInf(b[a], 0) {
			// As in newtonReduced: an indefinite or singular curvature
			// made the leverage overflow.
			st.levMax, st.lev, st.unbounded = math.Inf(1), nil, true
			for a := range st.res {
				st.res[a] = math.Inf(1)
			}
			return st
		}
	}
	op := krylov.NewOperator(J, AJ, sl)
	sol := krylov.Solve(op, b, leverageLimit)
	st.levMax = sol.LevMax
	if sol.Unbounded {
		st.unbounded = true
		for a := range st.res {
			st.res[a] = math.Inf(1)
		}
		return st
	}
	st.approx = !sol.Converged
	// delta = u + A J^T z; J delta = v + K z.
	z := sol.Z
	delta := append([]float64(nil), u...)
	for c, zc := range z {
		if zc != 0 {
			num.AddScaled(delta, zc, AJ[c])
		}
	}
	st.delta = delta
	kz := make([]float64, m)
	op.ApplyK(kz, z)
	for a, t := range ts {
		jd := v[a] + kz[a]
		st.res[a] = math.Abs(t.y - t.fx - jd)
		st.shift[a] = math.Abs(jd)
	}
	return st
}

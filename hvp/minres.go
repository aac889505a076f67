package hvp

import (
	"math"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// reorthMax bounds the storage for MINRES's Lanczos vectors, in float64s
// (64 MB).
const reorthMax = 8 << 20

// minres solves A x = b for a symmetric, possibly indefinite A given by
// its product (Paige and Saunders' MINRES, without preconditioning, in the
// form of SciPy's implementation). The Lanczos vectors are kept and each
// new one is reorthogonalised against them (up to reorthMax floats of
// storage): a damped Hessian's condition number is often 1e7 or more, and
// without it the recurrence loses orthogonality and stalls. It stops when
// the estimated residual norm falls to tol |b| or after maxIter
// iterations, and returns the solution and the number of iterations.
func minres(apply func(v, out []float64) error, b []float64, tol float64, maxIter int) ([]float64, int, error) {
	n := len(b)
	x := make([]float64, n)
	beta1 := num.Norm(b)
	if beta1 == 0 {
		return x, 0, nil
	}
	r1 := append([]float64(nil), b...)
	r2 := append([]float64(nil), b...)
	y := append([]float64(nil), b...)
	v := make([]float64, n)
	w := make([]float64, n)
	w1 := make([]float64, n)
	w2 := make([]float64, n)
	oldb, beta := 0.0, beta1
	dbar, epsln, phibar := 0.0, 0.0, beta1
	cs, sn := -1.0, 0.0
	const eps = 2.220446049250313e-16
	var basis [][]float64 // Lanczos vectors, for reorthogonalisation
	it := 0
	for it < maxIter {
		it++
		s := 1 / beta
		for i := range v {
			v[i] = s * y[i]
		}
		if (len(basis)+1)*n <= reorthMax {
			basis = append(basis, append([]float64(nil), v...))
		}
		if err := apply(v, y); err != nil {
			return nil, it, err
		}
		if it >= 2 {
			f := beta / oldb
			for i := range y {
				y[i] -= f * r1[i]
			}
		}
		alfa := num.Dot(v, y)
		f := alfa / beta
		for i := range y {
			y[i] -= f * r2[i]
		}
		for _, q := range basis {
			c := num.Dot(q, y)
			for i := range y {
				y[i] -= c * q[i]
			}
		}
		r1, r2 = r2, r1
		copy(r2, y)
		oldb = beta
		beta = num.Norm(r2)
		// Apply the previous rotation, then make the next one.
		oldeps := epsln
		delta := cs*dbar + sn*alfa
		gbar := sn*dbar - cs*alfa
		epsln = sn * beta
		dbar = -cs * beta
		gamma := math.Max(math.Hypot(gbar, beta), eps)
		cs, sn = gbar/gamma, beta/gamma
		phi := cs * phibar
		phibar = sn * phibar
		// Update x.
		w1, w2, w = w2, w, w1
		for i := range w {
			w[i] = (v[i] - oldeps*w1[i] - delta*w2[i]) / gamma
			x[i] += phi * w[i]
		}
		if phibar <= tol*beta1 || beta == 0 {
			break
		}
	}
	return x, it, nil
}

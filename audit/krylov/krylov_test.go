package krylov

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/rnnaudit/rnnaudit/internal/num"
)

// TestSolveMatchesDense: Solve's Z = Lambda^1/2 (I - S)^-1 b and largest
// leverage eigenvalue are those of a dense solve and eigendecomposition
// of S to 1e-8, on random blocks: more terms than parameters (S
// singular: the Krylov space closes and restarts), fewer, square, and
// one with a leverage eigenvalue within the limit of 1, which Solve
// calls unbounded.
func TestSolveMatchesDense(t *testing.T) {
	const limit = 1e-6
	for _, tc := range []struct {
		m, P      int
		unbounded bool
	}{{60, 25, false}, {30, 80, false}, {120, 120, false}, {40, 10, true}} {
		t.Run(fmt.Sprintf("m%d_P%d", tc.m, tc.P), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.P)))
			J := make([][]float64, tc.m)
			for a := range J {
				J[a] = make([]float64, tc.P)
				for j := range J[a] {
					J[a][j] = rnd.NormFloat64()
				}
			}
			// C = J^T Lambda J (this block) + other data + lambda I;
			// A = C^-1. Unbounded: the other data leave a direction
			// only this block determines, damped by a tiny lambda.
			sl := make([]float64, tc.m)
			for a := range sl {
				sl[a] = math.Sqrt(1 + 2*rnd.Float64())
			}
			C := mat.NewSymDense(tc.P, nil)
			for i := range tc.P {
				for j := i; j < tc.P; j++ {
					s := 0.0
					for a := range J {
						s += J[a][i] * sl[a] * sl[a] * J[a][j]
					}
					C.SetSym(i, j, s)
				}
			}
			other := mat.NewDense(2*tc.P, tc.P, nil)
			for i := range 2 * tc.P {
				for j := range tc.P {
					if !tc.unbounded || j != 0 {
						other.Set(i, j, rnd.NormFloat64())
					}
				}
			}
			var OO mat.SymDense
			OO.SymOuterK(1, other.T())
			C.AddSym(C, &OO)
			lam := 1.0
			if tc.unbounded {
				lam = 1e-9
			}
			for i := range tc.P {
				C.SetSym(i, i, C.At(i, i)+lam)
			}
			var A mat.Dense
			if err := A.Inverse(C); err != nil {
				t.Fatal(err)
			}
			AJ := make([][]float64, tc.m)
			for a := range J {
				var v mat.VecDense
				v.MulVec(&A, mat.NewVecDense(tc.P, J[a]))
				AJ[a] = v.RawVector().Data
			}
			b := make([]float64, tc.m)
			for a := range b {
				b[a] = sl[a] * rnd.NormFloat64()
			}
			// The dense reference: S, its largest eigenvalue, and
			// Lambda^1/2 (I - S)^-1 b.
			S := mat.NewSymDense(tc.m, nil)
			IS := mat.NewDense(tc.m, tc.m, nil)
			for a := range tc.m {
				for c := a; c < tc.m; c++ {
					s := sl[a] * sl[c] * (num.Dot(J[a], AJ[c]) + num.Dot(J[c], AJ[a])) / 2
					S.SetSym(a, c, s)
					IS.Set(a, c, -s)
					IS.Set(c, a, -s)
				}
				IS.Set(a, a, 1+IS.At(a, a))
			}
			var eig mat.EigenSym
			if !eig.Factorize(S, false) {
				t.Fatal("eigendecomposition failed")
			}
			vals := eig.Values(nil)
			wantMax := vals[len(vals)-1]

			got := Solve(NewOperator(J, AJ, sl), b, limit)
			if got.Unbounded != tc.unbounded || (wantMax > 1-limit) != tc.unbounded {
				t.Fatalf("unbounded: Solve %v, dense largest eigenvalue %v, want %v", got.Unbounded, wantMax, tc.unbounded)
			}
			if tc.unbounded {
				return
			}
			if !got.Converged {
				t.Errorf("the Lanczos process did not converge")
			}
			var y mat.VecDense
			if err := y.SolveVec(IS, mat.NewVecDense(tc.m, b)); err != nil {
				t.Fatal(err)
			}
			for a := range tc.m {
				want := sl[a] * y.AtVec(a)
				if math.Abs(got.Z[a]-want) > 1e-8*(1+math.Abs(want)) {
					t.Fatalf("Z[%d]: Solve %.12g, dense %.12g", a, got.Z[a], want)
				}
			}
			if math.Abs(got.LevMax-wantMax) > 1e-8*(1+math.Abs(wantMax)) {
				t.Errorf("largest leverage: Solve %.12g, dense %.12g", got.LevMax, wantMax)
			}
			if wantMax < 0.2 {
				t.Errorf("largest leverage %.3g: the case does not exercise the solve", wantMax)
			}
		})
	}
}

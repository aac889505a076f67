package graph

import (
	"math"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/asm/f64"
)

// The scalar functions of the elementwise operators and of the recurrent
// operators' activations, each with its first and second derivative: an
// activation value holds all of one function's rules, and the unary
// kernel (unaryK, at the end of this file) that applies them elementwise:
// its forward pass and its derivative rules, so that an elementwise
// function's gradient rule is read in one file.

// activation is a scalar function y = f(x) with its first and second
// derivatives, all as functions of the input x. The unary kernel's rules
// are built from them: the tangent dy = f'(x) dx, the cotangent
// gx += f'(x) g and its tangent dgx += f'(x) dg + f”(x) dx g, which gives
// Hessian-vector products.
type activation struct {
	name     string
	f, d, dd func(x float64) float64
	// dy and ddy, when set, give the same derivatives from the output
	// y = f(x), which is much cheaper for tanh, sigmoid and exp (no
	// exponential to recompute); the derivative rules then use them.
	dy, ddy func(y float64) float64
	// vec, when set, computes the unary kernel's forward and derivative
	// rules over whole slices on the assembly kernels of internal/asm/f64;
	// the kernel then uses it instead of the scalar functions.
	vec *sliceRules
}

// derivs returns functions of (x, y) for the first and second derivative.
func (a *activation) derivs() (d, dd func(x, y float64) float64) {
	if a.dy != nil {
		return func(_, y float64) float64 { return a.dy(y) }, func(_, y float64) float64 { return a.ddy(y) }
	}
	return func(x, _ float64) float64 { return a.d(x) }, func(x, _ float64) float64 { return a.dd(x) }
}

// sliceRules are an activation's unary-kernel rules over slices, the
// derivatives taken from the output y. Every slice is read at the
// positions of the first one.
type sliceRules struct {
	// f sets y = f(x).
	f func(y, x []float64)
	// jvp sets dy = f'(x) dx.
	jvp func(dy, y, dx []float64)
	// vjp adds f'(x) g to gx.
	vjp func(gx, y, g []float64)
	// vjpTangent adds f'(x) dg + f''(x) dx g to dgx; vjpTangentSet sets
	// dgx to it.
	vjpTangent, vjpTangentSet func(dgx, y, g, dg, dx []float64)
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

var (
	// actTanh: tanh' = 1 - tanh², tanh'' = -2 tanh (1 - tanh²). On slices
	// (the recurrent cells' hot path) the same rules run on the AVX-512 and
	// AVX2 kernels of internal/asm/f64.
	actTanh = &activation{name: "Tanh",
		f:   math.Tanh,
		d:   func(x float64) float64 { t := math.Tanh(x); return 1 - t*t },
		dd:  func(x float64) float64 { t := math.Tanh(x); return -2 * t * (1 - t*t) },
		dy:  func(t float64) float64 { return 1 - t*t },
		ddy: func(t float64) float64 { return -2 * t * (1 - t*t) },
		vec: &sliceRules{
			f:             f64.Tanh,
			jvp:           f64.TanhJVP,
			vjp:           f64.TanhVJP,
			vjpTangent:    f64.TanhVJPTangent,
			vjpTangentSet: f64.TanhVJPTangentSet,
		},
	}
	actSigmoid = &activation{name: "Sigmoid",
		f:   sigmoid,
		d:   func(x float64) float64 { s := sigmoid(x); return s * (1 - s) },
		dd:  func(x float64) float64 { s := sigmoid(x); return s * (1 - s) * (1 - 2*s) },
		dy:  func(s float64) float64 { return s * (1 - s) },
		ddy: func(s float64) float64 { return s * (1 - s) * (1 - 2*s) },
	}
	actRelu = &activation{name: "Relu",
		f: func(x float64) float64 {
			if x > 0 {
				return x
			}
			return 0
		},
		d: func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return 0
		},
		dd: zero,
	}
	actExp = &activation{name: "Exp", f: math.Exp, d: math.Exp, dd: math.Exp,
		dy: func(y float64) float64 { return y }, ddy: func(y float64) float64 { return y }}
	actLog = &activation{name: "Log",
		f:  math.Log,
		d:  func(x float64) float64 { return 1 / x },
		dd: func(x float64) float64 { return -1 / (x * x) },
	}
	actNeg = &activation{name: "Neg",
		f:  func(x float64) float64 { return -x },
		d:  func(float64) float64 { return -1 },
		dd: zero,
	}
	actSoftsign = &activation{name: "Softsign",
		f: func(x float64) float64 { return x / (1 + math.Abs(x)) },
		d: func(x float64) float64 { a := 1 + math.Abs(x); return 1 / (a * a) },
		dd: func(x float64) float64 {
			a := 1 + math.Abs(x)
			s := 1.0
			if x < 0 {
				s = -1
			}
			return -2 * s / (a * a * a)
		},
	}
	actSoftplus = &activation{name: "Softplus",
		f: func(x float64) float64 {
			if x > 0 {
				return x + math.Log1p(math.Exp(-x))
			}
			return math.Log1p(math.Exp(x))
		},
		d:  sigmoid,
		dd: func(x float64) float64 { s := sigmoid(x); return s * (1 - s) },
	}
)

func zero(float64) float64 { return 0 }

func actLeakyRelu(alpha float64) *activation {
	return &activation{name: "LeakyRelu",
		f: func(x float64) float64 {
			if x < 0 {
				return alpha * x
			}
			return x
		},
		d: func(x float64) float64 {
			if x < 0 {
				return alpha
			}
			return 1
		},
		dd: zero,
	}
}

func actThresholdedRelu(alpha float64) *activation {
	return &activation{name: "ThresholdedRelu",
		f: func(x float64) float64 {
			if x > alpha {
				return x
			}
			return 0
		},
		d: func(x float64) float64 {
			if x > alpha {
				return 1
			}
			return 0
		},
		dd: zero,
	}
}

func actScaledTanh(alpha, beta float64) *activation {
	return &activation{name: "ScaledTanh",
		f: func(x float64) float64 { return alpha * math.Tanh(beta*x) },
		d: func(x float64) float64 { t := math.Tanh(beta * x); return alpha * beta * (1 - t*t) },
		dd: func(x float64) float64 {
			t := math.Tanh(beta * x)
			return -2 * alpha * beta * beta * t * (1 - t*t)
		},
	}
}

func actHardSigmoid(alpha, beta float64) *activation {
	return &activation{name: "HardSigmoid",
		f: func(x float64) float64 { return math.Max(0, math.Min(1, alpha*x+beta)) },
		d: func(x float64) float64 {
			if v := alpha*x + beta; v > 0 && v < 1 {
				return alpha
			}
			return 0
		},
		dd: zero,
	}
}

func actElu(alpha float64) *activation {
	return &activation{name: "Elu",
		f: func(x float64) float64 {
			if x < 0 {
				return alpha * (math.Exp(x) - 1)
			}
			return x
		},
		d: func(x float64) float64 {
			if x < 0 {
				return alpha * math.Exp(x)
			}
			return 1
		},
		dd: func(x float64) float64 {
			if x < 0 {
				return alpha * math.Exp(x)
			}
			return 0
		},
	}
}

// actAffine is alpha*x + beta; with alpha 1 and beta 0 it is the identity.
func actAffine(alpha, beta float64) *activation {
	return &activation{name: "Affine",
		f:  func(x float64) float64 { return alpha*x + beta },
		d:  func(float64) float64 { return alpha },
		dd: zero,
	}
}

// actClip limits x to [lo, hi]; its derivative is 1 inside and 0 outside.
func actClip(lo, hi float64) *activation {
	return &activation{name: "Clip",
		f: func(x float64) float64 { return math.Min(math.Max(x, lo), hi) },
		d: func(x float64) float64 {
			if x < lo || x > hi {
				return 0
			}
			return 1
		},
		dd: zero,
	}
}

// recurrentActivation returns the activation a recurrent operator names in
// its activations attribute. alphas and betas are consumed in order by the
// activations that take a parameter, skipping those that take none (ONNX
// Runtime's reading); *ai and *bi are advanced accordingly. Names are
// matched without regard to case.
func recurrentActivation(name string, alphas, betas []float64, ai, bi *int) (*activation, error) {
	take := func(list []float64, i *int, def float64) float64 {
		if *i < len(list) {
			v := list[*i]
			*i++
			return v
		}
		return def
	}
	switch strings.ToLower(name) {
	case "tanh":
		return actTanh, nil
	case "sigmoid":
		return actSigmoid, nil
	case "relu":
		return actRelu, nil
	case "softsign":
		return actSoftsign, nil
	case "softplus":
		return actSoftplus, nil
	case "leakyrelu":
		return actLeakyRelu(take(alphas, ai, 0.01)), nil
	case "thresholdedrelu":
		return actThresholdedRelu(take(alphas, ai, 1)), nil
	case "elu":
		return actElu(take(alphas, ai, 1)), nil
	case "scaledtanh":
		a := take(alphas, ai, 1)
		return actScaledTanh(a, take(betas, bi, 1)), nil
	case "hardsigmoid":
		a := take(alphas, ai, 0.2)
		return actHardSigmoid(a, take(betas, bi, 0.5)), nil
	case "affine":
		a := take(alphas, ai, 1)
		return actAffine(a, take(betas, bi, 0)), nil
	}
	return nil, attrErr("unknown activation %q", name)
}

// unaryK applies an activation elementwise: the forward pass and every
// derivative rule of the elementwise operators (Tanh, Sigmoid, Relu, ...),
// from the activation's scalar derivatives or its slice rules.
type unaryK struct{ a *activation }

func (k *unaryK) keepsInt() bool { return false }

func (k *unaryK) forward(ex *exec, out *Tensor, in []*Tensor) {
	f := k.a.f
	src, dst := in[0].F, out.F
	if v := k.a.vec; v != nil {
		if ex.inline(len(dst)) {
			v.f(dst, src) // no closure: an allocation per call
			return
		}
		// The closures of the slice rules capture tensors rather than
		// slices: a smaller allocation.
		x := in[0]
		ex.parallelFor(len(dst), func(lo, hi int) { v.f(out.F[lo:hi], x.F[lo:hi]) })
		return
	}
	ex.parallelFor(len(dst), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = f(src[i])
		}
	})
}

// jvp: dy = f'(x) dx
func (k *unaryK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	if din[0] == nil {
		clear(dout.F)
		return
	}
	x, y, dx, dy := in[0].F, out.F, din[0].F, dout.F
	if v := k.a.vec; v != nil {
		if ex.inline(len(dy)) {
			v.jvp(dy, y, dx)
			return
		}
		tx := din[0] // the closure captures tensors: a smaller allocation than slices
		ex.parallelFor(len(dy), func(lo, hi int) { v.jvp(dout.F[lo:hi], out.F[lo:hi], tx.F[lo:hi]) })
		return
	}
	d, _ := k.a.derivs()
	ex.parallelFor(len(dy), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dy[i] = d(x[i], y[i]) * dx[i]
		}
	})
}

// vjp: gx += f'(x) g
func (k *unaryK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	if gin[0] == nil {
		return
	}
	x, y, gv, gx := in[0].F, out.F, g.F, gin[0].F
	if v := k.a.vec; v != nil {
		tgx := gin[0] // the closure captures tensors: a smaller allocation than slices
		ex.parallelFor(len(gv), func(lo, hi int) { v.vjp(tgx.F[lo:hi], out.F[lo:hi], g.F[lo:hi]) })
		return
	}
	d, _ := k.a.derivs()
	ex.parallelFor(len(gv), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gx[i] += d(x[i], y[i]) * gv[i]
		}
	})
}

// vjpTangent: dgx += f'(x) dg + f”(x) dx g
func (k *unaryK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	if dgin[0] == nil {
		return
	}
	x, y, gv, dgv, dgx := in[0].F, out.F, g.F, dg.F, dgin[0].F
	var dx []float64
	if din[0] != nil {
		dx = din[0].F
	}
	v := k.a.vec
	if ex.freshIn(0) {
		if v != nil && dx != nil && ex.inline(len(gv)) {
			v.vjpTangentSet(dgx, y, gv, dgv, dx)
			return
		}
		clear(dgx) // the other forms add
	}
	if v != nil && dx == nil && ex.inline(len(gv)) {
		v.vjp(dgx, y, dgv) // f' dg: the tangent of x is zero
		return
	}
	if v != nil && dx != nil {
		if ex.inline(len(gv)) {
			v.vjpTangent(dgx, y, gv, dgv, dx)
			return
		}
		tdgx, tdx := dgin[0], din[0] // the closure captures tensors: a smaller allocation than slices
		ex.parallelFor(len(gv), func(lo, hi int) {
			v.vjpTangent(tdgx.F[lo:hi], out.F[lo:hi], g.F[lo:hi], dg.F[lo:hi], tdx.F[lo:hi])
		})
		return
	}
	d, dd := k.a.derivs()
	ex.parallelFor(len(gv), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := d(x[i], y[i]) * dgv[i]
			if dx != nil {
				v += dd(x[i], y[i]) * dx[i] * gv[i]
			}
			dgx[i] += v
		}
	})
}

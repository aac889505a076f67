package graph

import (
	"fmt"
	"math"
)

// Elementwise operators beyond the recurrent core: scalar functions
// (unaryK with new activations), binary functions with broadcasting
// (fn2K: Pow, PRelu, Max, Min), comparisons (cmpK) and selection (selK:
// Where).
//
// Conventions at the points where a function is not differentiable (the
// rules must return something there): Abs and Sign have derivative 0 at 0;
// Relu 0 at 0 and LeakyRelu/PRelu slope 1 at 0 (the x >= 0 branch); Clip
// passes the derivative at its bounds (x in [min, max] has derivative 1,
// as PyTorch's clamp); Max and Min give a tie to their first operand;
// HardSigmoid and HardSwish take the inner piece only strictly inside
// their linear range. Comparisons, Sign and the condition of Where have
// derivative 0.

const (
	invSqrt2  = 1 / math.Sqrt2
	invSqrtPi = 0.5641895835477563 // 1/sqrt(pi)
)

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // 0, or NaN
}

var (
	actAbs = &activation{name: "Abs",
		f: math.Abs,
		d: func(x float64) float64 {
			if x == 0 {
				return 0
			}
			return sign(x)
		},
		dd: zero,
	}
	actSign = &activation{name: "Sign", f: sign, d: zero, dd: zero}
	actSqrt = &activation{name: "Sqrt",
		f:   math.Sqrt,
		d:   func(x float64) float64 { return 0.5 / math.Sqrt(x) },
		dd:  func(x float64) float64 { return -0.25 / (x * math.Sqrt(x)) },
		dy:  func(y float64) float64 { return 0.5 / y },
		ddy: func(y float64) float64 { return -0.25 / (y * y * y) },
	}
	actErf = &activation{name: "Erf",
		f:  math.Erf,
		d:  func(x float64) float64 { return 2 * invSqrtPi * math.Exp(-x*x) },
		dd: func(x float64) float64 { return -4 * x * invSqrtPi * math.Exp(-x*x) },
	}
	actSin = &activation{name: "Sin", f: math.Sin, d: math.Cos,
		dd: func(x float64) float64 { return -math.Sin(x) }}
	actCos = &activation{name: "Cos", f: math.Cos,
		d:  func(x float64) float64 { return -math.Sin(x) },
		dd: func(x float64) float64 { return -math.Cos(x) }}
	actReciprocal = &activation{name: "Reciprocal",
		f:   func(x float64) float64 { return 1 / x },
		d:   func(x float64) float64 { return -1 / (x * x) },
		dd:  func(x float64) float64 { return 2 / (x * x * x) },
		dy:  func(y float64) float64 { return -y * y },
		ddy: func(y float64) float64 { return 2 * y * y * y },
	}
	// actMish is x tanh(softplus(x)); with t = tanh(softplus(x)) and s =
	// sigmoid(x), t' = (1-t²) s.
	actMish = &activation{name: "Mish",
		f: func(x float64) float64 { return x * math.Tanh(actSoftplus.f(x)) },
		d: func(x float64) float64 {
			t, s := math.Tanh(actSoftplus.f(x)), sigmoid(x)
			return t + x*(1-t*t)*s
		},
		dd: func(x float64) float64 {
			t, s := math.Tanh(actSoftplus.f(x)), sigmoid(x)
			u := (1 - t*t) * s
			return 2*u + x*u*((1-s)-2*t*s)
		},
	}
	// actHardSwish is x HardSigmoid(x) with alpha 1/6, beta 1/2.
	actHardSwish = &activation{name: "HardSwish",
		f: func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) },
		d: func(x float64) float64 {
			switch {
			case x >= 3:
				return 1
			case x <= -3:
				return 0
			}
			return x/3 + 0.5
		},
		dd: func(x float64) float64 {
			if x > -3 && x < 3 {
				return 1.0 / 3
			}
			return 0
		},
	}
	// actGelu is x Phi(x), Phi the standard normal distribution function
	// and phi its density: derivative Phi + x phi, second derivative
	// phi (2 - x²).
	actGelu = &activation{name: "Gelu",
		f: func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x*invSqrt2)) },
		d: func(x float64) float64 {
			return 0.5*(1+math.Erf(x*invSqrt2)) + x*normalPDF(x)
		},
		dd: func(x float64) float64 { return normalPDF(x) * (2 - x*x) },
	}
	// actGeluTanh is 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x³).
	actGeluTanh = &activation{name: "GeluTanh",
		f: func(x float64) float64 { u, _, _ := geluU(x); return 0.5 * x * (1 + math.Tanh(u)) },
		d: func(x float64) float64 {
			u, u1, _ := geluU(x)
			t := math.Tanh(u)
			return 0.5*(1+t) + 0.5*x*(1-t*t)*u1
		},
		dd: func(x float64) float64 {
			u, u1, u2 := geluU(x)
			t := math.Tanh(u)
			return (1-t*t)*u1 + 0.5*x*(1-t*t)*(u2-2*t*u1*u1)
		},
	}
)

func normalPDF(x float64) float64 { return math.Exp(-0.5*x*x) * invSqrtPi * invSqrt2 }

// geluU is the argument of tanh in the tanh approximation of Gelu and its
// first and second derivatives.
func geluU(x float64) (u, u1, u2 float64) {
	const c, a = 0.7978845608028654, 0.044715 // sqrt(2/pi)
	return c * (x + a*x*x*x), c * (1 + 3*a*x*x), c * 6 * a * x
}

// actSelu is gamma (x for x > 0, alpha (e^x - 1) otherwise).
func actSelu(alpha, gamma float64) *activation {
	e := actElu(alpha)
	return &activation{name: "Selu",
		f: func(x float64) float64 {
			if x > 0 {
				return gamma * x
			}
			return gamma * e.f(x)
		},
		d: func(x float64) float64 {
			if x > 0 {
				return gamma
			}
			return gamma * alpha * math.Exp(x)
		},
		dd: func(x float64) float64 {
			if x > 0 {
				return 0
			}
			return gamma * alpha * math.Exp(x)
		},
	}
}

// actCelu is max(0, x) + min(0, alpha (exp(x/alpha) - 1)).
func actCelu(alpha float64) *activation {
	return &activation{name: "Celu",
		f: func(x float64) float64 {
			if x > 0 {
				return x
			}
			return alpha * math.Expm1(x/alpha)
		},
		d: func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return math.Exp(x / alpha)
		},
		dd: func(x float64) float64 {
			if x > 0 {
				return 0
			}
			return math.Exp(x/alpha) / alpha
		},
	}
}

// actPow is x^p for a constant exponent p.
func actPow(p float64) *activation {
	return &activation{name: "Pow",
		f:  func(x float64) float64 { return math.Pow(x, p) },
		d:  func(x float64) float64 { return p * math.Pow(x, p-1) },
		dd: func(x float64) float64 { return p * (p - 1) * math.Pow(x, p-2) },
	}
}

func lowerElu(c *compiler, n *Node, in []*value) ([]*value, error) {
	alpha, err := n.attrFloat("alpha", 1)
	if err != nil {
		return nil, err
	}
	return lowerUnary(actElu(alpha))(c, n, in)
}

func lowerSelu(c *compiler, n *Node, in []*value) ([]*value, error) {
	alpha, err := n.attrFloat("alpha", 1.67326319217681884765625)
	if err != nil {
		return nil, err
	}
	gamma, err := n.attrFloat("gamma", 1.05070102214813232421875)
	if err != nil {
		return nil, err
	}
	return lowerUnary(actSelu(alpha, gamma))(c, n, in)
}

func lowerCelu(c *compiler, n *Node, in []*value) ([]*value, error) {
	alpha, err := n.attrFloat("alpha", 1)
	if err != nil {
		return nil, err
	}
	if alpha == 0 {
		return nil, attrErr("Celu alpha must not be 0")
	}
	return lowerUnary(actCelu(alpha))(c, n, in)
}

func lowerHardSigmoid(c *compiler, n *Node, in []*value) ([]*value, error) {
	alpha, err := n.attrFloat("alpha", 0.2)
	if err != nil {
		return nil, err
	}
	beta, err := n.attrFloat("beta", 0.5)
	if err != nil {
		return nil, err
	}
	return lowerUnary(actHardSigmoid(alpha, beta))(c, n, in)
}

func lowerGelu(c *compiler, n *Node, in []*value) ([]*value, error) {
	approx, err := n.attrString("approximate", "none")
	if err != nil {
		return nil, err
	}
	switch approx {
	case "none":
		return lowerUnary(actGelu)(c, n, in)
	case "tanh":
		return lowerUnary(actGeluTanh)(c, n, in)
	}
	return nil, attrErr("Gelu approximate %q is not \"none\" or \"tanh\"", approx)
}

// lowerClip limits X to [min, max]: attributes before opset 11, optional
// inputs after. Constant bounds give one elementwise function; bounds
// computed at run time give Max and Min.
func lowerClip(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "input")
	if err != nil {
		return nil, err
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	var dlo, dhi *value
	if c.g.Opset < 11 {
		if lo, err = n.attrFloat("min", lo); err != nil {
			return nil, err
		}
		if hi, err = n.attrFloat("max", hi); err != nil {
			return nil, err
		}
	} else {
		bound := func(i int, def float64) (float64, *value, error) {
			if len(in) <= i || in[i] == nil {
				return def, nil, nil
			}
			if in[i].isStatic() {
				if in[i].t.Len() != 1 {
					return 0, nil, shapeErr("Clip bound must be a scalar, got shape %v", in[i].dims())
				}
				return in[i].t.Float64s()[0], nil, nil
			}
			if numel(in[i].dims()) != 1 {
				return 0, nil, shapeErr("Clip bound must be a scalar, got shape %v", in[i].dims())
			}
			return def, in[i], nil
		}
		if lo, dlo, err = bound(1, lo); err != nil {
			return nil, err
		}
		if hi, dhi, err = bound(2, hi); err != nil {
			return nil, err
		}
	}
	if x.isStatic() && x.t.DType == Int && dlo == nil && dhi == nil {
		out := NewInt(x.t.Shape, nil)
		for i, v := range x.t.I {
			out.I[i] = int64(math.Min(math.Max(float64(v), lo), hi))
		}
		return []*value{staticValue(out)}, nil
	}
	y := x
	if !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		y = c.unary(actClip(lo, hi), y)
	}
	if dlo != nil {
		y = c.fn2(fnMax, y, c.view(dlo, nil))
	}
	if dhi != nil {
		y = c.fn2(fnMin, y, c.view(dhi, nil))
	}
	return []*value{y}, nil
}

// lowerPow: a constant exponent gives an elementwise function of the base;
// otherwise the binary function.
func lowerPow(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "X", "Y")
	if err != nil {
		return nil, err
	}
	x, y := vs[0], vs[1]
	if _, ok := broadcastShape(x.dims(), y.dims()); !ok {
		return nil, shapeErr("Pow of shapes %v and %v: they do not broadcast", x.dims(), y.dims())
	}
	if y.isStatic() && y.t.Len() == 1 && len(y.dims()) <= len(x.dims()) && !x.isStatic() {
		return []*value{c.unary(actPow(y.t.Float64s()[0]), x)}, nil
	}
	return []*value{c.fn2(fnPow, x, y)}, nil
}

func lowerPRelu(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "X", "slope")
	if err != nil {
		return nil, err
	}
	x, s := vs[0], vs[1]
	if _, ok := broadcastShape(x.dims(), s.dims()); !ok {
		return nil, shapeErr("PRelu of shapes %v and %v: they do not broadcast", x.dims(), s.dims())
	}
	return []*value{c.fn2(fnPRelu, x, s)}, nil
}

// lowerVariadic folds a binary function over every present input (Max,
// Min), left to right.
func lowerVariadic(f *fn2) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		var acc *value
		for _, v := range in {
			if v == nil {
				continue
			}
			if acc == nil {
				acc = v
				continue
			}
			if _, ok := broadcastShape(acc.dims(), v.dims()); !ok {
				return nil, shapeErr("%s of shapes %v and %v: they do not broadcast", n.OpType, acc.dims(), v.dims())
			}
			acc = c.fn2(f, acc, v)
		}
		if acc == nil {
			return nil, fmt.Errorf("%w: %s has no inputs", ErrInput, n.OpType)
		}
		return []*value{acc}, nil
	}
}

// lowerSum adds every present input (Sum) and divides by their number
// (Mean).
func lowerSum(mean bool) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		var acc *value
		k := 0
		for _, v := range in {
			if v == nil {
				continue
			}
			k++
			if acc == nil {
				acc = v
				continue
			}
			var err error
			if acc, err = c.binary(opAdd, acc, v); err != nil {
				return nil, err
			}
		}
		if acc == nil {
			return nil, fmt.Errorf("%w: %s has no inputs", ErrInput, n.OpType)
		}
		if mean && k > 1 {
			acc = c.mustBinary(opDiv, acc, c.scalar(float64(k)))
		}
		return []*value{acc}, nil
	}
}

func lowerWhere(c *compiler, n *Node, in []*value) ([]*value, error) {
	vs, err := needAll(in, "condition", "X", "Y")
	if err != nil {
		return nil, err
	}
	cond, x, y := vs[0], vs[1], vs[2]
	shape, ok := broadcastShape(cond.dims(), x.dims())
	if ok {
		shape, ok = broadcastShape(shape, y.dims())
	}
	if !ok {
		return nil, shapeErr("Where of shapes %v, %v and %v: they do not broadcast", cond.dims(), x.dims(), y.dims())
	}
	k := &selK{ic: broadcastMap(cond.dims(), shape), ia: broadcastMap(x.dims(), shape), ib: broadcastMap(y.dims(), shape)}
	return []*value{c.emit(k, shape, cond, x, y)}, nil
}

func lowerCompare(op cmpOp) lowerFunc {
	return func(c *compiler, n *Node, in []*value) ([]*value, error) {
		vs, err := needAll(in, "A", "B")
		if err != nil {
			return nil, err
		}
		a, b := vs[0], vs[1]
		shape, ok := broadcastShape(a.dims(), b.dims())
		if !ok {
			return nil, shapeErr("%s of shapes %v and %v: they do not broadcast", n.OpType, a.dims(), b.dims())
		}
		k := &cmpK{op: op, ia: broadcastMap(a.dims(), shape), ib: broadcastMap(b.dims(), shape)}
		v := c.emit(k, shape, a, b)
		if v.isStatic() && v.t.DType == Float {
			v = staticValue(NewInt(v.t.Shape, v.t.Int64s())) // a boolean
		}
		return []*value{v}, nil
	}
}

// lowerNot negates a boolean: at compile time, or as 1 - x on a 0/1
// value computed at run time (a comparison, whose derivative is zero).
func lowerNot(c *compiler, n *Node, in []*value) ([]*value, error) {
	x, err := need(in, 0, "X")
	if err != nil {
		return nil, err
	}
	if x.isStatic() {
		out := NewInt(x.t.Shape, nil)
		for i, v := range x.t.Int64s() {
			if v == 0 {
				out.I[i] = 1
			}
		}
		return []*value{staticValue(out)}, nil
	}
	zero := c.scalar(0)
	return []*value{c.emit(&cmpK{op: cmpEq, ib: broadcastMap(nil, x.dims())}, x.dims(), x, zero)}, nil
}

// fn2 is a scalar function of two arguments with its first and second
// partial derivatives. i, when set, is the function on integers (for
// shape arithmetic at compile time).
type fn2 struct {
	name          string
	f             func(a, b float64) float64
	da, db        func(a, b float64) float64
	daa, dab, dbb func(a, b float64) float64
	i             func(a, b int64) int64
}

func zero2(_, _ float64) float64 { return 0 }

var (
	// fnPow is a^b: d/da = b a^(b-1), d/db = a^b log a.
	fnPow = &fn2{name: "Pow",
		f:   math.Pow,
		da:  func(a, b float64) float64 { return b * math.Pow(a, b-1) },
		db:  func(a, b float64) float64 { return math.Pow(a, b) * math.Log(a) },
		daa: func(a, b float64) float64 { return b * (b - 1) * math.Pow(a, b-2) },
		dab: func(a, b float64) float64 { return math.Pow(a, b-1) * (1 + b*math.Log(a)) },
		dbb: func(a, b float64) float64 { l := math.Log(a); return math.Pow(a, b) * l * l },
	}
	// fnPRelu is x for x >= 0 and slope x otherwise.
	fnPRelu = &fn2{name: "PRelu",
		f: func(x, s float64) float64 {
			if x < 0 {
				return s * x
			}
			return x
		},
		da: func(x, s float64) float64 {
			if x < 0 {
				return s
			}
			return 1
		},
		db: func(x, s float64) float64 {
			if x < 0 {
				return x
			}
			return 0
		},
		daa: zero2, dbb: zero2,
		dab: func(x, _ float64) float64 {
			if x < 0 {
				return 1
			}
			return 0
		},
	}
	fnMax = &fn2{name: "Max",
		f: func(a, b float64) float64 {
			if a >= b || math.IsNaN(a) {
				return a
			}
			return b
		},
		da:  func(a, b float64) float64 { return b2f(a >= b) },
		db:  func(a, b float64) float64 { return b2f(!(a >= b)) },
		daa: zero2, dab: zero2, dbb: zero2,
		i: func(a, b int64) int64 { return max(a, b) },
	}
	fnMin = &fn2{name: "Min",
		f: func(a, b float64) float64 {
			if a <= b || math.IsNaN(a) {
				return a
			}
			return b
		},
		da:  func(a, b float64) float64 { return b2f(a <= b) },
		db:  func(a, b float64) float64 { return b2f(!(a <= b)) },
		daa: zero2, dab: zero2, dbb: zero2,
		i: func(a, b int64) int64 { return min(a, b) },
	}
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fn2 applies a binary function with numpy broadcasting; the operands'
// shapes must broadcast.
func (c *compiler) fn2(f *fn2, a, b *value) *value {
	shape, _ := broadcastShape(a.dims(), b.dims())
	k := &fn2K{f: f, ia: broadcastMap(a.dims(), shape), ib: broadcastMap(b.dims(), shape)}
	return c.emit(k, shape, a, b)
}

// fn2K applies a binary function elementwise with broadcasting (ia, ib as
// in binK).
type fn2K struct {
	f      *fn2
	ia, ib []int32
}

func (k *fn2K) keepsInt() bool { return k.f.i != nil }

func (k *fn2K) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		for i := range out.I {
			out.I[i] = k.f.i(in[0].I[at(k.ia, i)], in[1].I[at(k.ib, i)])
		}
		return
	}
	a, b, f := in[0].F, in[1].F, k.f.f
	for i := range out.F {
		out.F[i] = f(a[at(k.ia, i)], b[at(k.ib, i)])
	}
}

// jvp: dy = f_a da + f_b db
func (k *fn2K) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	a, b := in[0].F, in[1].F
	for i := range dout.F {
		x, y := a[at(k.ia, i)], b[at(k.ib, i)]
		v := 0.0
		if din[0] != nil {
			v += k.f.da(x, y) * din[0].F[at(k.ia, i)]
		}
		if din[1] != nil {
			v += k.f.db(x, y) * din[1].F[at(k.ib, i)]
		}
		dout.F[i] = v
	}
}

// vjp: ga += f_a g, gb += f_b g
func (k *fn2K) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	a, b := in[0].F, in[1].F
	for i, v := range g.F {
		ai, bi := at(k.ia, i), at(k.ib, i)
		if gin[0] != nil {
			gin[0].F[ai] += k.f.da(a[ai], b[bi]) * v
		}
		if gin[1] != nil {
			gin[1].F[bi] += k.f.db(a[ai], b[bi]) * v
		}
	}
}

// vjpTangent: dga += f_a dg + (f_aa da + f_ab db) g,
// dgb += f_b dg + (f_ab da + f_bb db) g
func (k *fn2K) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	a, b := in[0].F, in[1].F
	for i, v := range g.F {
		ai, bi := at(k.ia, i), at(k.ib, i)
		x, y := a[ai], b[bi]
		var da, db float64
		if din[0] != nil {
			da = din[0].F[ai]
		}
		if din[1] != nil {
			db = din[1].F[bi]
		}
		if dgin[0] != nil {
			dgin[0].F[ai] += k.f.da(x, y)*dg.F[i] + (k.f.daa(x, y)*da+k.f.dab(x, y)*db)*v
		}
		if dgin[1] != nil {
			dgin[1].F[bi] += k.f.db(x, y)*dg.F[i] + (k.f.dab(x, y)*da+k.f.dbb(x, y)*db)*v
		}
	}
}

// cmpOp is a comparison.
type cmpOp uint8

const (
	cmpEq cmpOp = iota
	cmpGt
	cmpGe
	cmpLt
	cmpLe
)

func (op cmpOp) eval(a, b float64) bool {
	switch op {
	case cmpEq:
		return a == b
	case cmpGt:
		return a > b
	case cmpGe:
		return a >= b
	case cmpLt:
		return a < b
	}
	return a <= b
}

// cmpK compares with broadcasting, giving 1 for true and 0 for false. Its
// derivative is zero.
type cmpK struct {
	op     cmpOp
	ia, ib []int32
}

func (k *cmpK) keepsInt() bool { return true }

func (k *cmpK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		for i := range out.I {
			x, y := in[0].I[at(k.ia, i)], in[1].I[at(k.ib, i)]
			var r bool
			switch k.op {
			case cmpEq:
				r = x == y
			case cmpGt:
				r = x > y
			case cmpGe:
				r = x >= y
			case cmpLt:
				r = x < y
			default:
				r = x <= y
			}
			out.I[i] = int64(b2f(r))
		}
		return
	}
	for i := range out.F {
		out.F[i] = b2f(k.op.eval(in[0].F[at(k.ia, i)], in[1].F[at(k.ib, i)]))
	}
}

func (k *cmpK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) { clear(dout.F) }
func (k *cmpK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor)            {}
func (k *cmpK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
}

// selK is Where: y = a where the condition c is nonzero, b elsewhere, with
// broadcasting (ic, ia, ib as in binK). It is linear in a and b; the
// condition gets no derivative.
type selK struct{ ic, ia, ib []int32 }

func (k *selK) keepsInt() bool { return true }

func (k *selK) pick(in []*Tensor, i int) bool {
	if in[0].DType == Int {
		return in[0].I[at(k.ic, i)] != 0
	}
	return in[0].F[at(k.ic, i)] != 0
}

func (k *selK) forward(ex *exec, out *Tensor, in []*Tensor) {
	if out.DType == Int {
		for i := range out.I {
			if k.pick(in, i) {
				out.I[i] = in[1].I[at(k.ia, i)]
			} else {
				out.I[i] = in[2].I[at(k.ib, i)]
			}
		}
		return
	}
	for i := range out.F {
		if k.pick(in, i) {
			out.F[i] = in[1].F[at(k.ia, i)]
		} else {
			out.F[i] = in[2].F[at(k.ib, i)]
		}
	}
}

func (k *selK) jvp(ex *exec, dout *Tensor, in, din []*Tensor, out *Tensor) {
	for i := range dout.F {
		v := 0.0
		if k.pick(in, i) {
			if din[1] != nil {
				v = din[1].F[at(k.ia, i)]
			}
		} else if din[2] != nil {
			v = din[2].F[at(k.ib, i)]
		}
		dout.F[i] = v
	}
}

func (k *selK) vjp(ex *exec, gin, in []*Tensor, out, g *Tensor) {
	for i, v := range g.F {
		if k.pick(in, i) {
			if gin[1] != nil {
				gin[1].F[at(k.ia, i)] += v
			}
		} else if gin[2] != nil {
			gin[2].F[at(k.ib, i)] += v
		}
	}
}

func (k *selK) vjpTangent(ex *exec, dgin, in, din []*Tensor, out, g, dg *Tensor) {
	k.vjp(ex, dgin, in, out, dg)
}

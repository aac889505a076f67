package graph_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// smallGraph builds a model from nodes over input x (shape xShape) and the
// float initializers init (all parameters), with one output "y".
func smallGraph(t *testing.T, xShape []int, init map[string][]int, nodes ...*graph.Node) (*graph.Graph, *graph.Tensor) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	ts := map[string]*graph.Tensor{}
	var order []string
	for _, name := range []string{"W", "b", "c", "V"} {
		sh, ok := init[name]
		if !ok {
			continue
		}
		w := graph.NewFloat(sh, nil)
		for i := range w.F {
			w.F[i] = 0.5 + r.Float64()
		}
		ts[name] = w
		order = append(order, name)
	}
	var dims []graph.Dim
	for _, d := range xShape {
		dims = append(dims, graph.Dim{Value: d})
	}
	g, err := graph.New(17, []graph.ValueInfo{{Name: "x", Elem: graph.ElemDouble, Dims: dims}},
		[]graph.ValueInfo{{Name: "y", Elem: graph.ElemDouble}}, nodes, ts, order)
	if err != nil {
		t.Fatal(err)
	}
	x := graph.NewFloat(xShape, nil)
	for i := range x.F {
		x.F[i] = r.NormFloat64()
	}
	return g, x
}

func node(op string, out string, in ...string) *graph.Node {
	return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}}
}

// TestBackwardPerExampleFiniteDifferences checks the per-example split on
// the paths the recurrent fixtures do not take: weight blocks computed
// nonlinearly from the parameters (so neither plain nor transposed views
// of theta, their maps recomputed at each theta), one of them assembled
// by a Concat placed in its result; and parameters adding to,
// subtracting from, multiplying and dividing the data elementwise.
// Each example's gradient of <g_e, y> is checked against central
// differences, and the examples' gradients against the batch gradient.
func TestBackwardPerExampleFiniteDifferences(t *testing.T) {
	const N = 5
	for _, c := range []struct {
		name  string
		x     []int
		init  map[string][]int
		nodes []*graph.Node
	}{
		{"elementwise", []int{N, 3}, map[string][]int{"W": {3, 2}, "b": {2}, "c": {2}, "V": {1, 2}}, []*graph.Node{
			node("Mul", "W2", "W", "W"),
			node("MatMul", "h", "x", "W2"),
			node("Tanh", "z", "h"),
			node("Add", "zb", "z", "b"),
			node("Mul", "zc", "zb", "c"),
			node("Div", "zv", "zc", "V"),
			node("Sub", "y", "V", "zv"),
		}},
		{"concatenated weights", []int{N, 4}, map[string][]int{"W": {3, 2}, "V": {1, 2}}, []*graph.Node{
			node("Tanh", "Wt", "W"),
			node("Neg", "Vn", "V"),
			{Name: "Wc", OpType: "Concat", Inputs: []string{"Wt", "Vn"}, Outputs: []string{"Wc"}, Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 0}}},
			node("MatMul", "h", "x", "Wc"),
			node("Tanh", "y", "h"),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, x := smallGraph(t, c.x, c.init, c.nodes...)
			checkExamples(t, g, x, c.name == "concatenated weights")
		})
	}
}

// checkExamples checks BackwardPerExample on model g with input x, whose
// first axis indexes the examples and whose output has two values per
// example; parts says whether the program places values inside a
// Concat's result.
func checkExamples(t *testing.T, g *graph.Graph, x *graph.Tensor, parts bool) {
	N := x.Shape[0]
	p, err := g.Compile([]*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.PerExample([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	if got := graph.NumParts(p) > 0; got != parts {
		t.Fatalf("weights placed in a Concat's result: %v, want %v", got, parts)
	}
	theta := g.Theta()
	P := len(theta)
	s := p.NewState()
	outs, err := s.Forward(theta, []*graph.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	seed := graph.NewFloat(outs[0].Shape, nil)
	for i := range seed.F {
		seed.F[i] = r.NormFloat64()
	}
	ids := ex.Output(0)
	for i, e := range ids {
		if want := int32(i / 2); e != want {
			t.Fatalf("output element %d belongs to example %d, want %d", i, e, want)
		}
	}
	grads := make([][]float64, N)
	for e := range grads {
		grads[e] = make([]float64, P)
		for i := range grads[e] {
			grads[e][i] = math.NaN() // a reused buffer: every value must be set
		}
	}
	if err := s.BackwardPerExample(ex, []*graph.Tensor{seed}, grads); err != nil {
		t.Fatal(err)
	}
	// <g_e, y(theta)> for every example, from a separate State.
	fs := p.NewState()
	dots := func(th []float64) []float64 {
		y, err := fs.Forward(th, []*graph.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float64, N)
		for i, v := range y[0].F {
			d[ids[i]] += seed.F[i] * v
		}
		return d
	}
	const h = 1e-6
	for j := 0; j < P; j++ {
		tp := append([]float64(nil), theta...)
		tm := append([]float64(nil), theta...)
		tp[j] += h
		tm[j] -= h
		dp, dm := dots(tp), dots(tm)
		for e := 0; e < N; e++ {
			fd := (dp[e] - dm[e]) / (2 * h)
			if !(math.Abs(grads[e][j]-fd) <= 1e-6*math.Max(1, math.Abs(fd))) { // NaN fails
				t.Errorf("example %d, parameter %d: %.10g, finite differences %.10g", e, j, grads[e][j], fd)
			}
		}
	}
	// The split adds up to the batch gradient, here and at another theta
	// (where the nonlinear weight maps are recomputed).
	for k, scale := range []float64{1, 1.1} {
		th := append([]float64(nil), theta...)
		for j := range th {
			th[j] *= scale
		}
		if _, err := s.Forward(th, []*graph.Tensor{x}); err != nil {
			t.Fatal(err)
		}
		if err := s.BackwardPerExample(ex, []*graph.Tensor{seed}, grads); err != nil {
			t.Fatal(err)
		}
		sum := make([]float64, P)
		if err := s.Backward([]*graph.Tensor{seed}, sum); err != nil {
			t.Fatal(err)
		}
		for j := range sum {
			tot := 0.0
			for e := range grads {
				tot += grads[e][j]
			}
			if !(math.Abs(tot-sum[j]) <= 1e-12*math.Max(1, math.Abs(sum[j]))) {
				t.Errorf("theta %d, parameter %d: examples sum to %.15g, batch gradient %.15g", k, j, tot, sum[j])
			}
		}
	}
}

// TestPerExampleNotSeparable checks that programs whose examples meet
// before the parameters do are refused, naming the node.
func TestPerExampleNotSeparable(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     []int
		init  map[string][]int
		nodes []*graph.Node
		node  string
	}{
		{"softmax over the examples", []int{4, 3}, map[string][]int{"W": {3, 2}},
			[]*graph.Node{node("MatMul", "h", "x", "W"), {Name: "y", OpType: "Softmax", Inputs: []string{"h"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: 0}}}}, "y"},
		{"weights on the left", []int{3, 4}, map[string][]int{"W": {2, 3}},
			[]*graph.Node{node("MatMul", "y", "W", "x")}, "y"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, x := smallGraph(t, c.x, c.init, c.nodes...)
			p, err := g.Compile([]*graph.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			ax := 0
			if c.name == "weights on the left" {
				ax = 1
			}
			_, err = p.PerExample([]int{ax})
			if !errors.Is(err, graph.ErrNotSeparable) || !strings.Contains(err.Error(), `"`+c.node+`"`) {
				t.Fatalf("got %v, want ErrNotSeparable naming node %q", err, c.node)
			}
		})
	}
}

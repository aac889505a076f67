package graph_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
)

// controlFlowOpCases are the derivative cases of Loop, Scan, If and the
// sequence operators (TestOperatorDerivatives): a recurrent cell written
// as a Scan body (forward, and reversed with axes other than 0), as a Loop
// body collecting its states in a sequence (the pattern of a
// torch.jit.script-ed loop), and an If whose condition is a constant.

// withInit adds an initializer to the subgraph of a.
func withInit(a graph.Attr, name string, t *graph.Tensor) graph.Attr {
	a.G.Init = map[string]*graph.Tensor{name: t}
	return a
}

func controlFlowOpCases() []opCase {
	vi := func(names ...string) []graph.ValueInfo {
		out := make([]graph.ValueInfo, len(names))
		for i, n := range names {
			out[i] = graph.ValueInfo{Name: n}
		}
		return out
	}
	sub := func(name string, ins, outs []string, nodes ...*graph.Node) graph.Attr {
		return graph.Attr{Kind: graph.AttrGraph, G: &graph.Subgraph{Name: name, Inputs: vi(ins...), Outputs: vi(outs...), Nodes: nodes}}
	}
	cell := func(x, h, hn string) []*graph.Node {
		return []*graph.Node{
			op("MatMul", []string{hn + "a"}, []string{x, "W"}, nil),
			op("MatMul", []string{hn + "r"}, []string{h, "U"}, nil),
			op("Add", []string{hn + "s"}, []string{hn + "a", hn + "r"}, nil),
			op("Add", []string{hn + "t"}, []string{hn + "s", "b"}, nil),
			op("Tanh", []string{hn}, []string{hn + "t"}, nil),
		}
	}
	scanBody := append(cell("x", "h", "hn"), op("Mul", []string{"o"}, []string{"hn", "hn"}, nil))
	loopBody := append(cell("xt", "h", "hn"),
		op("Gather", []string{"xt"}, []string{"X", "i"}, map[string]graph.Attr{"axis": aInt(1)}),
		op("SequenceInsert", []string{"seqn"}, []string{"seq", "hn"}, nil),
		op("Identity", []string{"cout"}, []string{"cin"}, nil),
		op("Mul", []string{"o"}, []string{"hn", "b"}, nil),
	)
	rnnParams := map[string][]int{"X": {2, 3, 2}, "W": {2, 3}, "U": {3, 3}, "b": {3}, "h0": {2, 3}}
	return []opCase{
		{name: "Scan cell forward, a weight inside the body", params: rnnParams,
			nodes: []*graph.Node{op("Scan", []string{"hT", "Y"}, []string{"h0", "X"}, map[string]graph.Attr{
				"body": withInit(sub("body", []string{"h", "x"}, []string{"hn", "ob"},
					append(slices.Clone(scanBody), op("Add", []string{"ob"}, []string{"o", "inner"}, nil))...),
					"inner", graph.NewFloat([]int{3}, []float64{0.3, -0.2, 0.7})),
				"num_scan_inputs": aInt(1),
				"scan_input_axes": aInts(1), "scan_output_axes": aInts(1)})},
			outputs: []string{"hT", "Y"}},
		{name: "Scan cell reversed", params: rnnParams,
			nodes: []*graph.Node{op("Scan", []string{"hT", "Y"}, []string{"h0", "X"}, map[string]graph.Attr{
				"body": sub("body", []string{"h", "x"}, []string{"hn", "o"}, scanBody...), "num_scan_inputs": aInt(1),
				"scan_input_axes": aInts(-2), "scan_input_directions": aInts(1),
				"scan_output_axes": aInts(-1), "scan_output_directions": aInts(1)})},
			outputs: []string{"hT", "Y"}},
		{name: "Loop cell with a sequence", params: rnnParams, ints: map[string][]int64{"M": {3}, "zero": {0}},
			nodes: []*graph.Node{
				op("SequenceEmpty", []string{"s0"}, nil, nil),
				op("Loop", []string{"hT", "sT", "ys"}, []string{"M", "", "h0", "s0"}, map[string]graph.Attr{
					"body": sub("body", []string{"i", "cin", "h", "seq"}, []string{"cout", "hn", "seqn", "o"}, loopBody...)}),
				op("ConcatFromSequence", []string{"Y"}, []string{"sT"}, map[string]graph.Attr{"axis": aInt(1), "new_axis": aInt(1)}),
				op("SequenceInsert", []string{"s2"}, []string{"sT", "hT", "zero"}, nil),
				op("ConcatFromSequence", []string{"Z"}, []string{"s2"}, map[string]graph.Attr{"axis": aInt(0)}),
			},
			outputs: []string{"hT", "Y", "Z", "ys"}},
		{name: "If SequenceConstruct SequenceAt SequenceLength", params: map[string][]int{"a": {2, 3}, "c": {2, 3}},
			ints: map[string][]int64{"yes": {1}, "no": {0}, "one": {-1}},
			nodes: []*graph.Node{
				op("If", []string{"t"}, []string{"yes"}, map[string]graph.Attr{
					"then_branch": sub("then", nil, []string{"tt"}, op("Mul", []string{"tt"}, []string{"a", "c"}, nil)),
					"else_branch": sub("else", nil, []string{"te"}, op("Add", []string{"te"}, []string{"a", "c"}, nil))}),
				op("If", []string{"e"}, []string{"no"}, map[string]graph.Attr{
					"then_branch": sub("then", nil, []string{"a"}),
					"else_branch": sub("else", nil, []string{"ee"}, op("Div", []string{"ee"}, []string{"a", "c"}, nil))}),
				op("SequenceConstruct", []string{"s"}, []string{"t", "e"}, nil),
				op("SequenceAt", []string{"last"}, []string{"s", "one"}, nil),
				op("SequenceLength", []string{"n"}, []string{"s"}, nil),
				op("Cast", []string{"nf"}, []string{"n"}, map[string]graph.Attr{"to": aInt(11)}),
				op("Mul", []string{"y"}, []string{"last", "nf"}, nil),
				op("ConcatFromSequence", []string{"z"}, []string{"s"}, map[string]graph.Attr{"axis": aInt(-1)}),
			},
			pos:     []string{"c"},
			outputs: []string{"y", "z"}},
	}
}

// TestControlFlowBackend runs the ONNX backend cases of Loop, Scan and If
// (testdata/controlflow, see make.py there) and compares with the ONNX
// project's expected outputs, as TestConformance does.
func TestControlFlowBackend(t *testing.T) {
	dir := filepath.Join("testdata", "controlflow")
	for _, name := range []string{"test_loop11", "test_loop13_seq_wrapped", "test_scan_sum", "test_scan9_sum", "test_if"} {
		t.Run(name, func(t *testing.T) {
			runCase(t, filepath.Join(dir, name))
		})
	}
}

// TestBodyInitializerIsParameter checks that a float initializer of a loop
// body is a parameter, as those of the main graph are.
func TestBodyInitializerIsParameter(t *testing.T) {
	for _, c := range controlFlowOpCases() {
		if c.name != "Scan cell forward, a weight inside the body" {
			continue
		}
		init := map[string]*graph.Tensor{}
		var order []string
		for name, shape := range c.params {
			init[name] = graph.NewFloat(shape, nil)
			order = append(order, name)
		}
		slices.Sort(order)
		g, err := graph.New(17, nil, []graph.ValueInfo{{Name: "Y"}}, c.nodes, init, order)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range g.Params() {
			names = append(names, p.Name)
		}
		if !slices.Contains(names, "inner") || g.NumParams() != 2*3*2+2*3+3*3+3+2*3+3 {
			t.Errorf("parameters %v (%d values), want those of the main graph and \"inner\"", names, g.NumParams())
		}
		return
	}
	t.Fatal("case not found")
}

// TestControlFlowErrors checks that control flow rnnaudit cannot unroll is
// reported with its node and the reason.
func TestControlFlowErrors(t *testing.T) {
	vi := func(names ...string) []graph.ValueInfo {
		out := make([]graph.ValueInfo, len(names))
		for i, n := range names {
			out[i] = graph.ValueInfo{Name: n}
		}
		return out
	}
	branch := func(out string) graph.Attr {
		return graph.Attr{Kind: graph.AttrGraph, G: &graph.Subgraph{Outputs: vi(out)}}
	}
	loopBody := graph.Attr{Kind: graph.AttrGraph, G: &graph.Subgraph{Inputs: vi("i", "c", "v"), Outputs: vi("c", "v")}}
	for _, tc := range []struct {
		name  string
		nodes []*graph.Node
		ints  map[string][]int64
		is    error
		want  []string
	}{
		{"If on the parameters", []*graph.Node{op("If", []string{"y"}, []string{"a"}, map[string]graph.Attr{"then_branch": branch("a"), "else_branch": branch("a")})},
			nil, graph.ErrNotDifferentiable, []string{`node "y" (If)`, "the condition depends on the parameters or the float inputs", "fold to a constant"}},
		{"Loop of a huge trip count", []*graph.Node{op("Loop", []string{"y"}, []string{"M", "", "a"}, map[string]graph.Attr{"body": loopBody})},
			map[string][]int64{"M": {1 << 40}}, graph.ErrShape, []string{`node "y" (Loop)`, "the trip count is 1099511627776; rnnaudit unrolls at most 65536 iterations"}},
		{"Loop without a count or condition", []*graph.Node{op("Loop", []string{"y"}, []string{"", "", "a"}, map[string]graph.Attr{"body": loopBody})},
			nil, graph.ErrInput, []string{"Loop has neither a trip count nor a condition"}},
		{"Scan without a body", []*graph.Node{op("Scan", []string{"y"}, []string{"a"}, map[string]graph.Attr{"num_scan_inputs": aInt(1)})},
			nil, graph.ErrAttr, []string{`Scan needs the subgraph attribute "body"`}},
	} {
		init := map[string]*graph.Tensor{"a": graph.NewFloat([]int{1}, []float64{1})}
		for name, v := range tc.ints {
			init[name] = graph.NewInt([]int{len(v)}, v)
		}
		g, err := graph.New(17, nil, vi("y"), tc.nodes, init, []string{"a"})
		if err == nil {
			_, err = g.Compile(nil)
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !errors.Is(err, tc.is) {
			t.Errorf("%s: error %q does not wrap %v", tc.name, err, tc.is)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

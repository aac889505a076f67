package onnx_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// fixture reads the model of a reference case under testdata/<suite>,
// failing the test when it is missing.
func fixture(t testing.TB, suite, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", suite, name, "model.onnx"))
	if err != nil {
		t.Fatalf("reference fixture missing: %v", err)
	}
	return data
}

// lstmModel is one LSTM node that returns only Y_h, followed by a GRU
// with no bias, fed from Y_h: both have absent optional values ("").
func lstmModel() pb {
	nodes := pbs(
		nodePB("LSTM", "lstm", list("X", "W", "R"), list("", "Y_h"), attrInt("hidden_size", 2)),
		nodePB("GRU", "gru", list("Y_h", "W2", "R2", "", "", "H0"), list("Y2", ""), attrInt("hidden_size", 2)),
	)
	inputs := pbs(
		valueInfoPB("X", 1, 3, 1, 2),
		valueInfoPB("H0", 1, 1, 1, 2),
	)
	outputs := pbs(valueInfoPB("Y2", 1, 3, 1, 1, 2))
	inits := pbs(
		floatsPB("W", []int64{1, 8, 2}, make([]float32, 16)...),
		floatsPB("R", []int64{1, 8, 2}, make([]float32, 16)...),
		floatsPB("W2", []int64{1, 6, 2}, make([]float32, 12)...),
		floatsPB("R2", []int64{1, 6, 2}, make([]float32, 12)...),
	)
	return modelPB(14, graphPB(nodes, inputs, outputs, inits))
}

func TestDecodeEmptyNames(t *testing.T) {
	t.Parallel()
	g, err := onnx.Decode(lstmModel())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 2 {
		t.Fatalf("got %d nodes, want 2", len(g.Nodes))
	}
	lstm, gru := g.Nodes[0], g.Nodes[1]
	if want := list("", "Y_h"); !slices.Equal(lstm.Outputs, want) {
		t.Errorf("LSTM outputs: got %q, want %q", lstm.Outputs, want)
	}
	if want := list("Y_h", "W2", "R2", "", "", "H0"); !slices.Equal(gru.Inputs, want) {
		t.Errorf("GRU inputs: got %q, want %q", gru.Inputs, want)
	}
	if want := list("Y2", ""); !slices.Equal(gru.Outputs, want) {
		t.Errorf("GRU outputs: got %q, want %q", gru.Outputs, want)
	}
	if want := list("X", "W", "R"); !slices.Equal(lstm.Inputs, want) {
		t.Errorf("LSTM inputs: got %q, want %q", lstm.Inputs, want)
	}
	if lstm.Name != "lstm" || gru.Name != "gru" {
		t.Errorf("node names: got %q, %q", lstm.Name, gru.Name)
	}
}

func TestDecodeDuplicateInput(t *testing.T) {
	t.Parallel()
	m := modelPB(14, graphPB(
		pbs(nodePB("Mul", "square", list("x", "x"), list("y"))),
		pbs(valueInfoPB("x", 1, 3)),
		pbs(valueInfoPB("y", 1, 3)), nil))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Nodes[0].Inputs, list("x", "x"); !slices.Equal(got, want) {
		t.Errorf("Mul inputs: got %q, want %q", got, want)
	}
}

func TestDecodeConstant(t *testing.T) {
	t.Parallel()
	value := floatsPB("", []int64{2}, 1.5, -2)
	m := modelPB(14, graphPB(
		pbs(nodePB("Constant", "c", nil, list("k"), attrTensor("value", value)),
			nodePB("Add", "add", list("x", "k"), list("y"))),
		pbs(valueInfoPB("x", 1, 2)),
		pbs(valueInfoPB("y", 1, 2)), nil))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	var c *graph.Node
	for _, n := range g.Nodes {
		if n.OpType == "Constant" {
			c = n
		}
	}
	if c == nil {
		t.Fatal("no Constant node")
	}
	if len(c.Inputs) != 0 {
		t.Errorf("Constant inputs: got %q, want none", c.Inputs)
	}
	a, ok := c.Attrs["value"]
	if !ok || a.Kind != graph.AttrTensor || a.T == nil {
		t.Fatalf("Constant value attribute: got %+v", a)
	}
	if !slices.Equal(a.T.Shape, []int{2}) || !slices.Equal(a.T.F, []float64{1.5, -2}) {
		t.Errorf("Constant value: got %v %v, want [2] [1.5 -2]", a.T.Shape, a.T.F)
	}
}

func TestDecodeOpsetAndDims(t *testing.T) {
	t.Parallel()
	m := modelPB(17, graphPB(
		pbs(nodePB("Relu", "r", list("x"), list("y"))),
		pbs(valueInfoPB("x", 1, "batch", "time", 2)),
		pbs(valueInfoPB("y", 1, "batch", "time", 2)), nil))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if g.Opset != 17 {
		t.Errorf("opset: got %d, want 17", g.Opset)
	}
	want := []graph.Dim{{Value: -1, Name: "batch"}, {Value: -1, Name: "time"}, {Value: 2}}
	if len(g.Inputs) != 1 || !slices.Equal(g.Inputs[0].Dims, want) || g.Inputs[0].Elem != graph.ElemFloat {
		t.Errorf("inputs: got %+v, want x float %v", g.Inputs, want)
	}
	if got := g.Inputs[0].ShapeString(); got != "[batch time 2]" {
		t.Errorf("shape: got %s", got)
	}
}

func TestDecodeOpsetDomains(t *testing.T) {
	t.Parallel()
	g := graphPB(pbs(nodePB("Relu", "r", list("x"), list("y"))),
		pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)), nil)
	for _, tc := range []struct {
		name  string
		model pb
		opset int
		err   string
	}{
		{"ai.onnx", pb{}.varint(1, 8).bytes(8, pb{}.str(1, "com.example").varint(2, 3)).
			bytes(8, pb{}.str(1, "ai.onnx").varint(2, 13)).bytes(7, g), 13, ""},
		{"IR version 2, no imports", pb{}.varint(1, 2).bytes(7, g), 1, ""},
		{"no default import", pb{}.varint(1, 8).bytes(8, pb{}.str(1, "com.example").varint(2, 3)).bytes(7, g), 0,
			"onnx: not a valid ONNX model: node \"r\" (Relu) is in the default operator set, which the model does not import"},
		{"two versions", pb{}.varint(1, 8).bytes(8, pb{}.varint(2, 13)).bytes(8, pb{}.varint(2, 14)).bytes(7, g), 0,
			"onnx: not a valid ONNX model: the default operator set is imported twice, as versions 13 and 14"},
	} {
		got, err := onnx.Decode(tc.model)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: got error %v, want %s", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case got.Opset != tc.opset:
			t.Errorf("%s: opset %d, want %d", tc.name, got.Opset, tc.opset)
		}
	}
}

func TestDecodeAttributes(t *testing.T) {
	t.Parallel()
	m := modelPB(14, graphPB(
		pbs(nodePB("LeakyRelu", "lr", list("x"), list("y"),
			attrFloat("alpha", 0.25), attrInt("i", -3), attrInts("is", 1, -2), attrString("s", "tanh"),
			attrStrings("ss", "a", "b"))),
		pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)), nil))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	a := g.Nodes[0].Attrs
	if x := a["alpha"]; x.Kind != graph.AttrFloat || x.F != 0.25 {
		t.Errorf("alpha: %+v", x)
	}
	if x := a["i"]; x.Kind != graph.AttrInt || x.I != -3 {
		t.Errorf("i: %+v", x)
	}
	if x := a["is"]; x.Kind != graph.AttrInts || !slices.Equal(x.Ints, []int64{1, -2}) {
		t.Errorf("is: %+v", x)
	}
	if x := a["s"]; x.Kind != graph.AttrString || x.S != "tanh" {
		t.Errorf("s: %+v", x)
	}
	if x := a["ss"]; x.Kind != graph.AttrStrings || !slices.Equal(x.Strings, list("a", "b")) {
		t.Errorf("ss: %+v", x)
	}
}

// TestDecodeFloat16 decodes a model that onnx-go alone rejects: a float16
// input and a float16 initializer.
func TestDecodeFloat16(t *testing.T) {
	t.Parallel()
	m := modelPB(14, graphPB(
		pbs(nodePB("Cast", "c", list("x"), list("xf"), attrInt("to", 1)),
			nodePB("Cast", "c2", list("h"), list("hf"), attrInt("to", 1)),
			nodePB("Add", "add", list("xf", "hf"), list("y"))),
		pbs(valueInfoPB("x", 10, 2)),
		pbs(valueInfoPB("y", 1, 2)),
		pbs(tensorPB("h", 10, []int64{2}, []byte{0x00, 0x3c, 0x00, 0xc0}))))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if g.Inputs[0].Elem != graph.ElemFloat16 {
		t.Errorf("input element type: got %v, want float16", g.Inputs[0].Elem)
	}
	if got := g.Init["h"]; got == nil || !slices.Equal(got.F, []float64{1, -2}) {
		t.Errorf("float16 initializer: got %v, want [1 -2]", got)
	}
}

func TestDecodeBool(t *testing.T) {
	t.Parallel()
	m := modelPB(14, graphPB(
		pbs(nodePB("Cast", "c", list("b"), list("bf"), attrInt("to", 1)),
			nodePB("Add", "add", list("x", "bf"), list("y"))),
		pbs(valueInfoPB("x", 1, 3)),
		pbs(valueInfoPB("y", 1, 3)),
		pbs(tensorPB("b", 9, []int64{3}, []byte{1, 0, 1}))))
	g, err := onnx.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Init["b"]; got == nil || got.DType != graph.Int || !slices.Equal(got.I, []int64{1, 0, 1}) {
		t.Errorf("bool initializer: got %+v, want Int [1 0 1]", got)
	}
}

// badModels are models that Decode must reject with one clear error.
func badModels(testing.TB) []struct {
	name string
	data []byte
	is   error
	want []string // substrings of the message
} {
	good := func(nodes []pb, inits []pb) pb {
		return modelPB(14, graphPB(nodes, pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)), inits))
	}
	relu := nodePB("Relu", "r", list("x"), list("y"))
	body := graphPB(pbs(nodePB("Identity", "i", list("a"), list("b"))), pbs(valueInfoPB("a", 1)), pbs(valueInfoPB("b", 1)), nil)
	badBody := graphPB(pbs(nodePB("Frobnicate", "f", list("a"), list("b"))), pbs(valueInfoPB("a", 1)), pbs(valueInfoPB("b", 1)), nil)
	rng := rand.New(rand.NewPCG(1, 1))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	return []struct {
		name string
		data []byte
		is   error
		want []string
	}{
		{"empty", nil, onnx.ErrInvalid, []string{"onnx: not a valid ONNX model: the file is empty"}},
		{"random", random, onnx.ErrInvalid, []string{"onnx: not a valid ONNX model: "}},
		{"text", []byte("this is not a model\n"), onnx.ErrInvalid, []string{"onnx: not a valid ONNX model: "}},
		{"no graph", pb{}.varint(1, 8), onnx.ErrInvalid, []string{"the file holds no graph"}},
		{"no nodes", modelPB(14, graphPB(nil, nil, pbs(valueInfoPB("y", 1)), nil)), onnx.ErrInvalid, []string{"the graph has no nodes"}},
		{"no outputs", modelPB(14, graphPB(pbs(relu), pbs(valueInfoPB("x", 1)), nil, nil)), onnx.ErrInvalid, []string{"declares no outputs"}},
		{"unsupported ops", good(pbs(
			nodePB("Relu", "r0", list("x"), list("a")),
			nodePB("Frobnicate", "frob", list("a"), list("b")),
			nodePB("Relu", "r1", list("b"), list("c")),
			nodePB("Attention", "attn", list("c"), list("y")),
		), nil), graph.ErrUnsupportedOp, []string{"onnx: ", `"frob" (Frobnicate)`, `"attn" (Attention)`}},
		{"custom domain", good(pbs(pb(nodePB("Relu", "mine", list("x"), list("y"))).str(7, "com.example")), nil),
			graph.ErrUnsupportedOp, []string{`"mine" (Relu)`, "com.example"}},
		{"unsupported operators in bodies", good(pbs(
			nodePB("Loop", "loop", list("", "", "x"), list("a"), attrGraph("body", badBody)),
			nodePB("Scan", "scan", list("a"), list("b"), attrGraph("body", body)),
			nodePB("If", "if", list("b"), list("y"), attrGraph("then_branch", body), attrGraph("else_branch", badBody)),
		), nil), graph.ErrUnsupportedOp, []string{`"loop" (Loop)`, `"if" (If)`, `subgraph "body"`, `subgraph "else_branch"`, `"f" (Frobnicate)`}},
		{"undefined value in a body", good(pbs(
			nodePB("Scan", "scan", list("x"), list("y"), attrGraph("body", graphPB(pbs(nodePB("Add", "add", list("a", "nowhere"), list("b"))), pbs(valueInfoPB("a", 1)), pbs(valueInfoPB("b", 1)), nil))),
		), nil), nil, []string{`"scan" (Scan)`, `input "nowhere" is not a graph input`}},
		{"string initializer", good(pbs(nodePB("Add", "add", list("x", "s"), list("y"))),
			pbs(pb{}.packed(1, 1).varint(2, 8).str(8, "s").str(6, "hello"))),
			onnx.ErrUnsupported, []string{`onnx: initializer "s": element type string is not supported`}},
		{"complex initializer", good(pbs(nodePB("Add", "add", list("x", "c"), list("y"))),
			pbs(tensorPB("c", 14, []int64{1}, make([]byte, 8)))),
			onnx.ErrUnsupported, []string{`initializer "c": element type complex64 is not supported`}},
		{"too few values", good(pbs(nodePB("Add", "add", list("x", "w"), list("y"))),
			pbs(floatsPB("w", []int64{2, 3}, 1, 2, 3, 4, 5))),
			onnx.ErrInvalid, []string{`onnx: not a valid ONNX model: initializer "w": 5 values for dims [2 3], which hold 6`}},
		{"raw size", good(pbs(nodePB("Add", "add", list("x", "w"), list("y"))),
			pbs(tensorPB("w", 1, []int64{2}, make([]byte, 12)))),
			onnx.ErrInvalid, []string{`initializer "w"`, "3 values for dims [2], which hold 2"}},
		{"bad raw length", good(pbs(nodePB("Add", "add", list("x", "w"), list("y"))),
			pbs(tensorPB("w", 1, []int64{2}, make([]byte, 7)))),
			onnx.ErrInvalid, []string{`initializer "w"`, "raw_data of 7 bytes"}},
		{"two bad initializers", good(pbs(nodePB("Add", "add", list("x", "w"), list("a")), nodePB("Add", "add2", list("a", "v"), list("y"))),
			pbs(floatsPB("w", []int64{2}, 1), floatsPB("v", []int64{3}, 1))),
			onnx.ErrInvalid, []string{"2 problems", `initializer "w"`, `initializer "v"`}},
		{"external data", good(pbs(nodePB("Add", "add", list("x", "w"), list("y"))),
			pbs(pb{}.packed(1, 2).varint(2, 1).str(8, "w").bytes(13, pb{}.str(1, "location").str(2, "w.bin")).varint(14, 1))),
			onnx.ErrExternalData, []string{`external data file "w.bin", which tensor "w" needs, is read only beside a model loaded from its file`}},
		{"constant with bad tensor", good(pbs(nodePB("Constant", "k", nil, list("c"), attrTensor("value", floatsPB("", []int64{3}, 1))),
			nodePB("Add", "add", list("x", "c"), list("y"))), nil),
			onnx.ErrInvalid, []string{`node "k" (Constant): `, `attribute "value": 1 value for dims [3], which hold 3`}},
		{"untyped attribute", good(pbs(nodePB("Relu", "r", list("x"), list("y"), pb{}.str(1, "alpha").varint(3, 1))), nil),
			onnx.ErrUnsupported, []string{`node "r" (Relu): attribute "alpha" has no type`}},
		{"duplicate attribute", good(pbs(nodePB("Relu", "r", list("x"), list("y"), attrInt("a", 1), attrInt("a", 2))), nil),
			onnx.ErrInvalid, []string{`attribute "a" appears twice`}},
		{"string input", modelPB(14, graphPB(pbs(relu), pbs(valueInfoPB("x", 8, 2)), pbs(valueInfoPB("y", 1, 2)), nil)),
			onnx.ErrUnsupported, []string{`graph input "x": element type string is not supported`}},
		{"sequence input", modelPB(14, graphPB(pbs(relu),
			pbs(pb{}.str(1, "x").bytes(2, pb{}.bytes(4, pb{}))), pbs(valueInfoPB("y", 1, 2)), nil)),
			onnx.ErrUnsupported, []string{`graph input "x": sequence values are not supported`}},
		{"node without outputs", good(pbs(relu, nodePB("Relu", "r2", list("y"), nil)), nil),
			onnx.ErrInvalid, []string{`node "r2" (Relu) has no outputs`}},
		{"invalid UTF-8", good(pbs(nodePB("Relu", "r\xff", list("x"), list("y"))), nil),
			onnx.ErrInvalid, []string{"invalid UTF-8"}},
		{"huge fan-out", good(pbs(nodePB("Split", "s", slices.Repeat(list("x"), 1000), slices.Repeat(list("y"), 1000))), nil),
			onnx.ErrUnsupported, []string{`node "s" (Split): 1000 outputs and 1000 inputs: not supported`}},
		{"group wire type", append(modelPB(14, pb{}), 0x0b), onnx.ErrInvalid, []string{"group encoding"}},
	}
}

func TestDecodeBad(t *testing.T) {
	t.Parallel()
	for _, tc := range badModels(t) {
		g, err := onnx.Decode(tc.data)
		if err == nil {
			t.Errorf("%s: got a graph, want an error", tc.name)
			continue
		}
		if g != nil {
			t.Errorf("%s: got a graph and an error", tc.name)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: error %q does not wrap %q", tc.name, err, tc.is)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

// TestDecodeUnsupportedListsAll checks that every unsupported node is a
// separate *graph.NodeError in the error list.
func TestDecodeUnsupportedListsAll(t *testing.T) {
	t.Parallel()
	m := modelPB(14, graphPB(pbs(
		nodePB("Frobnicate", "frob", list("x"), list("a")),
		nodePB("Attention", "attn", list("a"), list("y")),
	), pbs(valueInfoPB("x", 1, 2)), pbs(valueInfoPB("y", 1, 2)), nil))
	_, err := onnx.Decode(m)
	var list graph.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want a graph.ErrorList", err)
	}
	var nodes []string
	for _, e := range list {
		var ne *graph.NodeError
		if errors.As(e, &ne) && errors.Is(ne, graph.ErrUnsupportedOp) {
			nodes = append(nodes, ne.Node+" "+ne.OpType)
		}
	}
	slices.Sort(nodes)
	if want := []string{"attn Attention", "frob Frobnicate"}; !slices.Equal(nodes, want) {
		t.Errorf("unsupported nodes: got %q, want %q", nodes, want)
	}
}

// TestDecodeTruncated cuts real models at many lengths: each cut must give
// an error (or, rarely, a smaller valid model), never a panic.
func TestDecodeTruncated(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lstm_peephole", "gru_bidirectional_linear_before_reset_seqlens"} {
		data := fixture(t, "onnx-recurrent", name)
		for _, n := range []int{1, 2, 5, 10, 17, 50, 100, len(data) / 3, len(data) / 2, len(data) - 10, len(data) - 1} {
			if n >= len(data) {
				continue
			}
			g, err := onnx.Decode(data[:n])
			if err == nil {
				t.Errorf("%s cut at %d of %d bytes: got %d nodes, want an error", name, n, len(data), len(g.Nodes))
				continue
			}
			if !errors.Is(err, onnx.ErrInvalid) || !strings.HasPrefix(err.Error(), "onnx: not a valid ONNX model: ") {
				t.Errorf("%s cut at %d: got %q", name, n, err)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(good, lstmModel(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Load(good); err != nil {
		t.Errorf("Load: %v", err)
	}
	bad := filepath.Join(dir, "bad.onnx")
	if err := os.WriteFile(bad, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := onnx.Load(bad)
	if want := "onnx: " + bad + ": not a valid ONNX model: "; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, onnx.ErrInvalid) {
		t.Errorf("Load(bad): got %v, want prefix %q", err, want)
	}
	missing := filepath.Join(dir, "missing.onnx")
	_, err = onnx.Load(missing)
	if want := "onnx: " + missing + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing): got %v, want %q", err, want)
	}
}

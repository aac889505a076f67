package onnx_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// paramsRef is testdata/params/params.json, written by make_params.py
// from the PyTorch modules.
type paramsRef struct {
	GRU struct {
		Parameters       []string `json:"parameters"`
		Buffers          []string `json:"buffers"`
		BridgeParameters []string `json:"bridge_parameters"`
	} `json:"gru_std"`
}

func paramNames(g *graph.Graph) []string {
	var out []string
	for _, p := range g.Params() {
		out = append(out, p.Name)
	}
	return out
}

func constReasons(g *graph.Graph) map[string]string {
	m := map[string]string{}
	for _, c := range g.Constants() {
		m[c.Name] = c.Reason
	}
	return m
}

// TestStandardisedInputs: a GRU whose export standardises its inputs,
// (x - mean) / std with the statistics as PyTorch buffers: the
// statistics are constants (input normalisers), everything else PyTorch
// trained is a parameter: 101 values, not 105. Exported by the Python
// bridge, the file records its trained initializers and the loader takes
// exactly those.
func TestStandardisedInputs(t *testing.T) {
	dir := filepath.Join("testdata", "params")
	b, err := os.ReadFile(filepath.Join(dir, "params.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref paramsRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	want := []string{"head.bias", "onnx::GRU_114", "onnx::GRU_115", "onnx::GRU_116", "onnx::MatMul_117"}
	g, err := onnx.Load(filepath.Join(dir, "gru_std.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if got := paramNames(g); !slices.Equal(got, want) || g.NumParams() != 101 || g.TrainedRecord() {
		t.Errorf("parameters %v (%d values, record %v), want %v (101 values, by rule)", got, g.NumParams(), g.TrainedRecord(), want)
	}
	r := constReasons(g)
	for _, buf := range ref.GRU.Buffers {
		if !strings.Contains(r[buf], `normalises graph input "x"`) {
			t.Errorf("buffer %s: reason %q, want an input normaliser", buf, r[buf])
		}
	}

	bg, err := onnx.Load(filepath.Join(dir, "gru_std_bridge.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	rec := slices.Sorted(slices.Values(ref.GRU.BridgeParameters))
	if got := slices.Sorted(slices.Values(paramNames(bg))); !bg.TrainedRecord() || !slices.Equal(got, rec) || !slices.Equal(rec, want) {
		t.Errorf("bridge export: parameters %v (record %v), the file records %v, want %v", got, bg.TrainedRecord(), rec, want)
	}
	r = constReasons(bg)
	for _, buf := range ref.GRU.Buffers {
		if !strings.Contains(r[buf], "not among the initializers the export recorded as trained") {
			t.Errorf("bridge export, buffer %s: reason %q", buf, r[buf])
		}
	}
}

// maskModel is y = MatMul(x, w) + m, with m given: x [1, 2], w [2, 2],
// m [1, 2]; meta, when not empty, is the value of the trained-parameter
// record.
func maskModel(w, m []float32, meta string) []byte {
	g := graphPB(
		pbs(nodePB("MatMul", "mm", list("x", "w"), list("z")), nodePB("Add", "add", list("z", "m"), list("y"))),
		pbs(valueInfoPB("x", 1, 1, 2)), pbs(valueInfoPB("y", 1, 1, 2)),
		pbs(tensorPB("w", 1, []int64{2, 2}, f32raw(w...)), tensorPB("m", 1, []int64{1, 2}, f32raw(m...))))
	model := modelPB(14, g)
	if meta != "" {
		model = model.bytes(14, pb{}.str(1, graph.TrainedKey).str(2, meta))
	}
	return model
}

// TestMaskIsConstant: an additive mask of 0 and -inf is a constant and
// loads, where a parameter holding -inf is refused as diverged.
func TestMaskIsConstant(t *testing.T) {
	inf := float32(math.Inf(-1))
	g, err := onnx.Decode(maskModel([]float32{1.5, -0.25, 0.75, 2.125}, []float32{0, inf}, ""))
	if err != nil {
		t.Fatalf("a -inf mask: %v", err)
	}
	if got := paramNames(g); !slices.Equal(got, []string{"w"}) || !strings.Contains(constReasons(g)["m"], "a mask") {
		t.Errorf("parameters %v, constants %v", got, constReasons(g))
	}
	_, err = onnx.Decode(maskModel([]float32{1.5, inf, 0.75, 2.125}, []float32{0, 0.5}, ""))
	if !errors.Is(err, onnx.ErrNonFinite) || !strings.Contains(err.Error(), `initializer "w"`) {
		t.Errorf("a weight holding -inf: %v, want ErrNonFinite naming w", err)
	}
}

// TestTrainedRecord: the record of trained initializers decides, over
// the rules; a record naming what the file does not hold, or not JSON,
// is refused.
func TestTrainedRecord(t *testing.T) {
	w := []float32{1.5, -0.25, 0.75, 2.125}
	g, err := onnx.Decode(maskModel(w, []float32{0.5, -1.5}, `["m"]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := paramNames(g); !slices.Equal(got, []string{"m"}) || !strings.Contains(constReasons(g)["w"], graph.TrainedKey) {
		t.Errorf("record [m]: parameters %v, constants %v", got, constReasons(g))
	}
	for _, tc := range []struct{ meta, want string }{
		{`["w","bias"]`, `names "bias", which the file holds no initializer of`},
		{`w`, "is not a JSON list of initializer names"},
	} {
		_, err := onnx.Decode(maskModel(w, []float32{0.5, -1.5}, tc.meta))
		if !errors.Is(err, onnx.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("record %s: %v, want ErrInvalid saying %q", tc.meta, err, tc.want)
		}
	}
}

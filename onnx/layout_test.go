package onnx_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
)

// recurrentModel is x -> nodes -> an LSTM reading value "seq" with the
// given layout attribute (-1 for none) -> y.
func recurrentModel(t *testing.T, dims []any, layout int64, nodes ...pb) []byte {
	t.Helper()
	var attrs []pb
	attrs = append(attrs, attrInt("hidden_size", 2))
	if layout >= 0 {
		attrs = append(attrs, attrInt("layout", layout))
	}
	nodes = append(nodes, nodePB("LSTM", "lstm", list("seq", "W", "R"), list("y"), attrs...))
	return modelPB(14, graphPB(nodes,
		pbs(valueInfoPB("lengths", 7, 3), valueInfoPB("x", 1, dims...)),
		pbs(valueInfoPB("y", 1)),
		pbs(floatsPB("W", []int64{1, 8, 2}, make([]float32, 16)...), floatsPB("R", []int64{1, 8, 2}, make([]float32, 16)...))))
}

// scanModel is x -> node -> a Scan of value "seq" along axis (Keras
// SimpleRNN as tf2onnx converts it scans the time-major transpose of x).
func scanModel(axis int64, node pb) []byte {
	body := graphPB(pbs(nodePB("Add", "add", list("h", "xt"), list("hn")), nodePB("Identity", "o", list("hn"), list("out"))),
		pbs(valueInfoPB("h", 1), valueInfoPB("xt", 1)), pbs(valueInfoPB("hn", 1), valueInfoPB("out", 1)), nil)
	return modelPB(14, graphPB(pbs(node,
		nodePB("Scan", "scan", list("h0", "seq"), list("hT", "y"), attrGraph("body", body), attrInt("num_scan_inputs", 1), attrInts("scan_input_axes", axis))),
		pbs(valueInfoPB("x", 1, "s0", "s1", 2)), pbs(valueInfoPB("y", 1)),
		pbs(floatsPB("h0", []int64{2}, 0, 0))))
}

func TestDetectLayout(t *testing.T) {
	t.Parallel()
	identity := nodePB("Identity", "id", list("x"), list("seq"))
	transpose := nodePB("Transpose", "tr", list("x"), list("seq"), attrInts("perm", 1, 0, 2))
	for _, tc := range []struct {
		name   string
		model  []byte
		want   onnx.Layout
		reason string
	}{
		{"names batch time", recurrentModel(t, []any{"batch", "time", 2}, -1, identity), onnx.BatchFirst, "dimension names [batch time 2]"},
		{"names T N", recurrentModel(t, []any{"T", "N", 2}, 1, identity), onnx.TimeFirst, "dimension names [T N 2]"},
		{"names Batch_Size", recurrentModel(t, []any{"Batch_Size", "s1", 2}, -1, identity), onnx.BatchFirst, "dimension names [Batch_Size s1 2]"},
		{"names seq", recurrentModel(t, []any{"seq_len", 4, 2}, 1, identity), onnx.TimeFirst, "dimension names"},
		{"layout 0", recurrentModel(t, []any{5, 3, 2}, 0, identity), onnx.TimeFirst, `the input feeds LSTM node "lstm" (layout 0)`},
		{"no layout attribute", recurrentModel(t, []any{5, 3, 2}, -1, identity), onnx.TimeFirst, `LSTM node "lstm" (layout 0)`},
		{"layout 1", recurrentModel(t, []any{5, 3, 2}, 1, identity), onnx.BatchFirst, `LSTM node "lstm" (layout 1)`},
		{"contradictory names", recurrentModel(t, []any{"batch", "batch", 2}, 1, identity), onnx.BatchFirst, `LSTM node "lstm" (layout 1)`},
		{"unknown names", recurrentModel(t, []any{"s0", "s1", 2}, 0, transpose), onnx.BatchFirst, `Transpose [1 0 2] before LSTM node "lstm" (layout 0)`},
		{"transpose into layout 1", recurrentModel(t, []any{5, 3, 2}, 1, transpose), onnx.TimeFirst, "Transpose [1 0 2] before LSTM"},
		{"gather then transpose", recurrentModel(t, []any{5, 3, 2}, 0,
			nodePB("Shape", "shape", list("x"), list("s")),
			nodePB("Gather", "sort", list("x", "lengths"), list("xs")),
			nodePB("Transpose", "tr", list("xs"), list("seq"), attrInts("perm", 1, 0, 2))), onnx.BatchFirst, "Transpose [1 0 2] before LSTM"},
		{"other transpose", recurrentModel(t, []any{5, 3, 2}, 0,
			nodePB("Transpose", "tr", list("x"), list("seq"), attrInts("perm", 0, 2, 1))), onnx.Unknown, `Transpose node "tr" with perm [0 2 1]`},
		{"conv between permutes", recurrentModel(t, []any{5, 3, 2}, 0,
			nodePB("Transpose", "p1", list("x"), list("xc"), attrInts("perm", 0, 2, 1)),
			nodePB("Conv", "conv", list("xc", "W"), list("c")),
			nodePB("Relu", "relu", list("c"), list("r")),
			nodePB("Transpose", "dead", list("r"), list("unused"), attrInts("perm", 0, 2, 1)),
			nodePB("Shape", "shape", list("unused"), list("s")),
			nodePB("Transpose", "p2", list("r"), list("seq"), attrInts("perm", 2, 0, 1))), onnx.BatchFirst,
			`Transpose node "p1" with perm [0 2 1], Conv node "conv", Transpose node "p2" with perm [2 0 1] before LSTM node "lstm" (layout 0)`},
		{"feature axis as time", recurrentModel(t, []any{5, 3, 2}, 0,
			nodePB("Transpose", "p", list("x"), list("seq"), attrInts("perm", 2, 0, 1))), onnx.Unknown, "reads axis 0 of the input as batch and axis 2 as time"},
		{"no recurrent node", modelPB(14, graphPB(pbs(nodePB("Relu", "r", list("x"), list("y"))),
			pbs(valueInfoPB("x", 1, 5, 3, 2)), pbs(valueInfoPB("y", 1)), nil)), onnx.Unknown, "no RNN, LSTM, GRU or Scan node reads the input"},
		{"scan along axis 1", scanModel(1, identity), onnx.BatchFirst, `Scan node "scan" scans axis 1 of the input after 0 transposes`},
		{"scan after a transpose", scanModel(0, transpose), onnx.BatchFirst, `Scan node "scan" scans axis 0 of the input after 1 transposes`},
		{"scan along axis 0", scanModel(-3, identity), onnx.TimeFirst, `Scan node "scan" scans axis 0`},
		{"rank 2", modelPB(14, graphPB(pbs(nodePB("Relu", "r", list("x"), list("y"))),
			pbs(valueInfoPB("x", 1, "batch", 2)), pbs(valueInfoPB("y", 1)), nil)), onnx.Unknown, "no float input of rank 3"},
	} {
		g, err := onnx.Decode(tc.model)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, reason := onnx.DetectLayout(g)
		if got != tc.want || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: got %v (%s), want %v (%s)", tc.name, got, reason, tc.want, tc.reason)
		}
	}
}

func TestLayoutString(t *testing.T) {
	t.Parallel()
	for l, want := range map[onnx.Layout]string{onnx.BatchFirst: "batch-first", onnx.TimeFirst: "time-first", onnx.Unknown: "unknown"} {
		if got := l.String(); got != want {
			t.Errorf("%d: got %q, want %q", int(l), got, want)
		}
	}
}

// TestDetectLayoutCNNLSTM detects the layout of the zoo's CNN-LSTM exports
// (x.permute(0, 2, 1) -> Conv1d -> ReLU -> permute -> LSTM, made by
// testdata/zoo/make_zoo.py) from the graph alone, with the input's
// dimension names removed as in an export without dynamic_axes names.
func TestDetectLayoutCNNLSTM(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cnn_lstm_op13.onnx", "cnn_lstm_op17.onnx"} {
		g, err := onnx.Load(filepath.Join("testdata", "zoo", name))
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.Inputs[0].Dims {
			g.Inputs[0].Dims[i].Name = ""
		}
		got, reason := onnx.DetectLayout(g)
		if got != onnx.BatchFirst || !strings.Contains(reason, `Conv node "/conv/Conv"`) {
			t.Errorf("%s: got %v (%s), want batch-first through the Conv", name, got, reason)
		}
	}
}

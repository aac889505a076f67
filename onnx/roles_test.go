package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
)

// The exporter's parameter names get the role PyTorch's export gave them
// (lstm_packed_bf.onnx: export.py names the LSTM weights onnx::LSTM_...).
func TestParamRole(t *testing.T) {
	g, err := onnx.Load(filepath.Join(onnxtest.PyTorchDir(), "lstm_packed_bf.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"head.bias":        `A of Add node "/head/Add"`, // the exporter adds the bias first
		"onnx::LSTM_138":   `W of LSTM node "/rnn/LSTM"`,
		"onnx::LSTM_139":   `R of LSTM node "/rnn/LSTM"`,
		"onnx::LSTM_140":   `B of LSTM node "/rnn/LSTM"`,
		"onnx::MatMul_143": `B of MatMul node "/head/MatMul"`,
	}
	if n := len(g.Params()); n != len(want) {
		t.Fatalf("%d parameter tensors, want %d", n, len(want))
	}
	for _, p := range g.Params() {
		if got := onnx.ParamRole(g, p.Name); got != want[p.Name] {
			t.Errorf("%s: role %q, want %q", p.Name, got, want[p.Name])
		}
	}
	if got := onnx.ParamRole(g, "no such tensor"); got != "" {
		t.Errorf("unused name: %q", got)
	}
}

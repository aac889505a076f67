package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A PyTorch checkpoint or TorchScript file given as --model
// (testdata/make_checkpoints.py) is named as such with the export recipe,
// in one line, not as a protobuf decoding error.
func TestCheckpointMessage(t *testing.T) {
	for _, tc := range []struct{ file, what string }{
		{"checkpoint.pt", "a zip archive, as PyTorch writes a .pt/.pth checkpoint (torch.save)"},
		{"checkpoint_legacy.pth", "a Python pickle, as PyTorch writes a .pt/.pth checkpoint in its legacy format"},
		{"script.pt", "TorchScript model (torch.jit.save)"},
	} {
		model := filepath.Join("testdata", tc.file)
		for _, args := range [][]string{{"inspect", "--model", model}, {"--model", model, "--data", exTrain}} {
			code, _, errs := runCmd(args...)
			if code != 1 {
				t.Errorf("%q: exit %d, want 1", args, code)
			}
			oneMessage(t, args, errs, 1)
			for _, want := range []string{model, tc.what, "torch.onnx.export(model", `dynamic_axes={"x": {0: "batch", 1: "time"}`} {
				if !strings.Contains(errs, want) {
					t.Errorf("%q: stderr lacks %q: %s", args, want, errs)
				}
			}
			if strings.Contains(errs, "invalid field number") {
				t.Errorf("%q: protobuf error instead of the file's kind: %s", args, errs)
			}
		}
	}
}

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zooInputsDir holds the zoo of what practitioners' exports carry besides
// weights (static covariates, a Transformer encoder with a causal mask,
// external data, a decoder of the last rows read), built by
// make_zoo_inputs.py there, with float64 PyTorch references in the format
// of zooDir's.
const zooInputsDir = "../../onnx/testdata/zoo-inputs"

// zooInputsDoc is one <name>.json of zooInputsDir: a zoo entry and the
// audit flags it needs.
type zooInputsDoc struct {
	zooDoc
	Flags []string `json:"flags"`
}

func zooInputsEntries(t *testing.T) map[string]*zooInputsDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(zooInputsDir, "*.json"))
	if err != nil || len(files) != 8 {
		t.Fatalf("the zoo in %s has %d entries, want 8: %v", zooInputsDir, len(files), err)
	}
	out := map[string]*zooInputsDoc{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := new(zooInputsDoc)
		if err := json.Unmarshal(b, d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// zooForward reads models relative to zooDir.
		d.Model = filepath.Join("..", filepath.Base(zooInputsDir), d.Model)
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = d
	}
	return out
}

// TestZooInputsForward loads every entry and compares its outputs with
// PyTorch's float64 outputs to 1e-10 and its gradients with central
// differences and autograd (zooForward).
func TestZooInputsForward(t *testing.T) {
	for name, d := range zooInputsEntries(t) {
		t.Run(name, func(t *testing.T) {
			if err := zooForward(&d.zooDoc); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestZooInputsAudit audits every entry on its training CSV with the flags
// its JSON names and checks that every interval is finite.
func TestZooInputsAudit(t *testing.T) {
	for name, d := range zooInputsEntries(t) {
		t.Run(name, func(t *testing.T) {
			if err := zooInputsAudit(t, name, d); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// zooInputsAudit audits entry d (every sequence left out in turn) and
// checks that its limits are finite.
func zooInputsAudit(t *testing.T, name string, d *zooInputsDoc) error {
	out := filepath.Join(t.TempDir(), name+".json")
	args := append([]string{"--model", filepath.Join(zooDir, d.Model), "--data", filepath.Join(zooInputsDir, d.Train),
		"--quiet", "--json", out}, d.Flags...)
	code, _, stderr := runCmd(args...)
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var r struct {
		Summary struct {
			Infinite int     `json:"infinite_intervals"`
			Points   int     `json:"points"`
			Coverage float64 `json:"coverage"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	if r.Summary.Points == 0 || r.Summary.Infinite != 0 {
		return fmt.Errorf("%d of %d intervals unbounded", r.Summary.Infinite, r.Summary.Points)
	}
	t.Logf("%s: %d points, coverage %.3f", name, r.Summary.Points, r.Summary.Coverage)
	return nil
}

package cli

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainBudgetErrors: a bad --train-budget or --train-init is one
// line naming the flag and what to give (exit 2 before any file is read;
// exit 1 for an initial model that is not the audited one).
func TestTrainBudgetErrors(t *testing.T) {
	t.Parallel()
	base := []string{"--model", exModel, "--data", exTrain}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{append(base, "--train-budget", "epochs=3"), 2, "--train-budget: training budget \"epochs=3\": give epochs and lr"},
		{append(base, "--train-budget", "epochs=3,lr=0.1,optimizer=rmsprop"), 2, `optimizer "rmsprop": give sgd or adam`},
		{append(base, "--train-budget", "epochs=3,lr=0.1,damping=guess"), 2, `damping "guess": give derived or fitted`},
		{append(base, "--train-init", exModel), 2, "--train-init needs --train-budget"},
		{append(base, "--train-budget", "epochs=3,lr=0.1", "--params", "W*"), 2, "drop --params"},
		{append(base, "--train-budget", "epochs=3,lr=0.1", "--train-init", "../../examples/chickweight/model.onnx"), 1, "give the same model exported before training"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errs, tc.want)
		}
		if out != "" {
			t.Errorf("%q: stdout %q", tc.args, out)
		}
		oneMessage(t, tc.args, errs, 1)
	}
}

// withMetadata writes a copy of the model at src with one more
// metadata_props entry key: value (ModelProto field 14, a
// StringStringEntryProto of key 1 and value 2), appended as the Python
// bridge's _onnxwire.append_metadata does: a protobuf message's fields
// may come in any order, and a repeated field's entries add up.
func withMetadata(t *testing.T, src, key, value string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	field := func(num int, s []byte) []byte {
		out := binary.AppendUvarint(nil, uint64(num<<3|2))
		out = binary.AppendUvarint(out, uint64(len(s)))
		return append(out, s...)
	}
	entry := append(field(1, []byte(key)), field(2, []byte(value))...)
	path := filepath.Join(t.TempDir(), "budget.onnx")
	if err := os.WriteFile(path, append(b, field(14, entry)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrainBudgetRecorded: a model whose export recorded its training
// budget (export(..., train_budget=...): metadata rnnaudit.train_budget)
// is audited with the early-stopping estimate without --train-budget,
// which, given, wins; a recorded budget that does not parse is an error
// naming the file and the flag that overrides it.
func TestTrainBudgetRecorded(t *testing.T) {
	t.Parallel()
	model := withMetadata(t, exModel, "rnnaudit.train_budget", "epochs=5,lr=0.01,batch=4,optimizer=sgd")
	js := filepath.Join(t.TempDir(), "r.json")
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{nil, "epochs=5,lr=0.01,batch=4,optimizer=sgd"},
		{[]string{"--train-budget", "epochs=7,lr=0.01,optimizer=sgd"}, "epochs=7,lr=0.01,batch=0,optimizer=sgd"},
	} {
		args := append([]string{"--model", model, "--data", exTrain, "--test", exTest, "--damping-sensitivity=false", "--json", js, "--quiet"}, tc.extra...)
		if code, _, errs := runCmd(args...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errs)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Diagnostics struct {
				EarlyStop *struct{ Budget, Source string } `json:"early_stopping"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if e := r.Diagnostics.EarlyStop; e == nil || e.Budget != tc.want || e.Source != "derived" {
			t.Errorf("%q: early_stopping %+v, want budget %q, derived", tc.extra, e, tc.want)
		}
	}
	bad := withMetadata(t, exModel, "rnnaudit.train_budget", "epochs=5")
	code, _, errs := runCmd("--model", bad, "--data", exTrain, "--quiet")
	if code == 0 || !strings.Contains(errs, "training budget recorded at export") || !strings.Contains(errs, "give --train-budget") {
		t.Errorf("a bad recorded budget: exit %d, %q", code, errs)
	}
}

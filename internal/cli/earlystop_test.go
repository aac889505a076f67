package cli

import (
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

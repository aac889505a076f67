package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// TestFitPredict checks that Predict after Fit gives the result of a full
// Run on the same test file (every limit of every kind, the summaries,
// the conformal comparison and the diagnostics) on the small synthetic
// example with its calibration split, and that a fit predicts a second
// data set as Run does.
func TestFitPredict(t *testing.T) {
	g, sum, ds := synthetic(t, "model_small.onnx", "train_small.csv", "test_small.csv", "cal_small.csv")
	train, test, cal := ds[0], ds[1], ds[2]
	low, high := 0.0, 10.0
	opt := audit.Options{Layout: graph.BatchFirst, Ridge: 10, Low: &low, High: &high, Calibration: cal}
	ctx := context.Background()
	want, err := audit.Run(ctx, g, train, test, &opt)
	if err != nil {
		t.Fatal(err)
	}
	f, err := audit.Fit(ctx, g, train, &opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Predict(ctx, test)
	if err != nil {
		t.Fatal(err)
	}
	if want.Conformal == nil || len(got.Sequences) != test.Len() {
		t.Fatalf("calibrated result %v, %d sequences: want a calibrated result of %d", want.Conformal != nil, len(got.Sequences), test.Len())
	}
	// Run and Predict judge the Results they make: package reports only
	// renders the verdict and the recommendation.
	judged(t, "Run", want)
	judged(t, "Predict", got)
	want.Diag.Phases, got.Diag.Phases = nil, nil
	if d := diff("Result", reflect.ValueOf(want), reflect.ValueOf(got)); d != "" {
		t.Errorf("Predict after Fit differs from Run: %s", d)
	}
	// Through an artifact: Save, Load, Predict.
	var buf bytes.Buffer
	if err := f.Save(&buf, sum); err != nil {
		t.Fatal(err)
	}
	art := buf.Bytes()
	loaded, err := audit.Load(bytes.NewReader(art), g, sum)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = loaded.Predict(ctx, test); err != nil {
		t.Fatal(err)
	}
	got.Diag.Phases = nil
	judged(t, "Predict from an artifact", got)
	if d := diff("Result", reflect.ValueOf(want), reflect.ValueOf(got)); d != "" {
		t.Errorf("Predict after Save and Load differs from Run: %s", d)
	}
	// Refusals: another model, another format version, other columns.
	other := sum
	other[0] ^= 1
	if _, err := audit.Load(bytes.NewReader(art), g, other); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("another model's hash: error %v, want one naming the SHA-256", err)
	}
	bad := bytes.Clone(art)
	bad[len("rnnaudit-fit\r\n")]++
	if _, err := audit.Load(bytes.NewReader(bad), g, sum); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("another format version: error %v, want one naming the version", err)
	}
	swapped := *test
	swapped.Features = slices.Clone(test.Features)
	swapped.Features[0] += "_renamed"
	if _, err := loaded.Predict(ctx, &swapped); err == nil || !strings.Contains(err.Error(), "feature") {
		t.Errorf("other feature columns: error %v, want one naming the feature columns", err)
	}

	// Fit once, predict another data set: the training file's first
	// sequences, without calibration.
	opt.Calibration = nil
	second := &blocks.Dataset{File: "other.csv", Features: train.Features, Targets: train.Targets, Shift: train.Shift, Seqs: test.Seqs[:50]}
	want, err = audit.Run(ctx, g, train, second, &opt)
	if err != nil {
		t.Fatal(err)
	}
	if f, err = audit.Fit(ctx, g, train, &opt); err != nil {
		t.Fatal(err)
	}
	if got, err = f.Predict(ctx, second); err != nil {
		t.Fatal(err)
	}
	judged(t, "Predict of a second data set", got)
	want.Diag.Phases, got.Diag.Phases = nil, nil
	if d := diff("Result", reflect.ValueOf(want), reflect.ValueOf(got)); d != "" {
		t.Errorf("Predict of a second data set differs from Run: %s", d)
	}
	// The comparison sees a difference where there is one.
	if d := diff("Result", reflect.ValueOf(want.Sequences[:49]), reflect.ValueOf(got.Sequences[1:])); d == "" {
		t.Error("diff finds no difference between different sequences")
	}
}

// judged fails t unless res carries the audit's judgement: a verdict
// with its reasons and, with a calibration set, the recommendation with
// one Holds per kind.
func judged(t *testing.T, what string, res *audit.Result) {
	t.Helper()
	if res.Verdict.Level == "" || len(res.Verdict.Reasons) == 0 {
		t.Errorf("%s: no verdict (%+v)", what, res.Verdict)
	}
	if c := res.Conformal; c != nil && res.Summary != nil && len(c.Kinds) > 0 {
		if r := c.Recommendation; r == nil || len(r.Holds) != len(c.Kinds) || len(r.Short) != len(c.Kinds) {
			t.Errorf("%s: no recommendation among %d kinds (%+v)", what, len(c.Kinds), r)
		}
	}
}

// diff is the first difference between a and b beyond 1e-12 (relative)
// in a float, NaNs equal, or "".
func diff(path string, a, b reflect.Value) string {
	if a.Kind() != b.Kind() {
		return path + ": kinds differ"
	}
	switch a.Kind() {
	case reflect.Float64, reflect.Float32:
		x, y := a.Float(), b.Float()
		if x == y || math.IsNaN(x) && math.IsNaN(y) || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)) {
			return ""
		}
		return fmt.Sprintf("%s: %v != %v", path, x, y)
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil differs"
			}
			return ""
		}
		return diff(path, a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: lengths %d != %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return path + ": map sizes differ"
		}
		for _, k := range a.MapKeys() {
			if d := diff(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
	default:
		if a.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %v != %v", path, a.Interface(), b.Interface())
		}
	}
	return ""
}

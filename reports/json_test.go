package reports

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func TestJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixture(), &Options{Columns: &Columns{ID: "id", Time: "t", Target: "glucose", Features: []string{"dose", "meal"}}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", b.Bytes())
}

func TestJSONDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := WriteJSON(&a, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two writes of the same result differ")
	}
}

// The phase times, which differ from run to run, are in the JSON only when
// asked for, as a timings object after the deterministic part.
func TestJSONTimings(t *testing.T) {
	decode := func(o *Options) map[string]any {
		var b bytes.Buffer
		if err := WriteJSON(&b, fixture(), o); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	for _, o := range []*Options{nil, {}} {
		doc := decode(o)
		if _, ok := doc["timings"]; ok {
			t.Errorf("options %+v: the JSON has timings", o)
		}
		if _, ok := doc["diagnostics"].(map[string]any)["phases"]; ok {
			t.Errorf("options %+v: the diagnostics have phase times", o)
		}
	}
	tm, ok := decode(&Options{Timings: true})["timings"].(map[string]any)
	if !ok {
		t.Fatal("Timings: true gives no timings object")
	}
	// The fixture's phases: 0.004 s, 0.25 s and 1.5 s.
	ph := tm["phases"].([]any)
	if len(ph) != 3 || ph[1].(map[string]any)["name"] != "block gradients" || ph[1].(map[string]any)["seconds"] != 0.25 {
		t.Errorf("timings.phases %v", ph)
	}
	if tot := tm["total_seconds"].(float64); math.Abs(tot-1.754) > 1e-12 {
		t.Errorf("timings.total_seconds %g, want 1.754", tot)
	}
}

// TestJSONFields decodes the document generically and checks the layout
// docs/reading-a-report.md ("JSON format") documents.
func TestJSONFields(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if doc["format"] != FormatName || doc["version"] != float64(FormatVersion) {
		t.Errorf("format %v version %v", doc["format"], doc["version"])
	}
	sum := doc["summary"].(map[string]any)
	for _, k := range []string{"coverage", "coverage_per_step", "joint_coverage", "mean_length", "length_per_step", "rmse", "alpha", "audit"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if got := sum["coverage"]; got != 0.875 {
		t.Errorf("coverage %v, want 0.875", got)
	}
	if cps := sum["coverage_per_step"].([]any); len(cps) != 6 || cps[5] != nil {
		t.Errorf("coverage_per_step %v: want 6 values, the last null (NaN)", cps)
	}
	audit := sum["audit"].(map[string]any)
	low := audit["low"].(map[string]any)
	if low["threshold"] != 4.0 || low["precision"] != nil || low["recall"] != 0.0 {
		t.Errorf("audit.low %v: want threshold 4, precision null (nothing flagged), recall 0", low)
	}
	high := audit["high"].(map[string]any)
	if high["threshold"] != 10.0 || high["precision"] != 0.75 || high["recall"] != 1.0 {
		t.Errorf("audit.high %v", high)
	}
	for _, k := range []string{"gradient_norm", "influence_norms", "most_influential", "warnings"} {
		if _, ok := doc["diagnostics"].(map[string]any)[k]; !ok {
			t.Errorf("diagnostics lacks %q", k)
		}
	}
	seqs := doc["sequences"].([]any)
	if len(seqs) != 3 {
		t.Fatalf("%d sequences, want 3", len(seqs))
	}
	s0 := seqs[0].(map[string]any)
	steps := s0["steps"].([]any)
	if s0["id"] != "P101" || len(steps) != 6 {
		t.Fatalf("sequence 0: id %v, %d steps", s0["id"], len(steps))
	}
	st := steps[0].(map[string]any)
	for _, k := range []string{"t", "horizon", "prediction", "lower", "upper", "target"} {
		if _, ok := st[k]; !ok {
			t.Errorf("step lacks %q: %v", k, st)
		}
	}
	if _, ok := st["upper_unbounded"]; ok {
		t.Errorf("a bounded step has upper_unbounded: %v", st)
	}
	inf := steps[2].(map[string]any)
	if inf["upper"] != nil || inf["upper_unbounded"] != true || inf["lower"] == nil {
		t.Errorf("unbounded upper limit: %v, want upper null and upper_unbounded true", inf)
	}
	if ninf := seqs[1].(map[string]any)["steps"].([]any)[4].(map[string]any); ninf["lower"] != nil || ninf["lower_unbounded"] != true {
		t.Errorf("unbounded lower limit: %v", ninf)
	}
	if last := steps[5].(map[string]any); last["target"] != nil || last["covered"] != nil {
		if _, has := last["target"]; has {
			t.Errorf("a step without target has a target key: %v", last)
		}
	}
}

func TestJSONNoSummary(t *testing.T) {
	r := fixture()
	r.Summary, r.Calibration = nil, nil
	r.Retrain = nil
	r.Setting.Low, r.Setting.High = nil, nil
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["summary"]; !ok || v != nil {
		t.Errorf("summary = %v (present %v), want null", v, ok)
	}
	if _, ok := doc["retrain"]; ok {
		t.Error("retrain present without a re-training comparison")
	}
	if st := doc["settings"].(map[string]any); st["low"] != nil || st["high"] != nil {
		t.Errorf("thresholds %v %v, want null", st["low"], st["high"])
	}
}

func TestJSONNonFinite(t *testing.T) {
	r := fixture()
	r.Diag.Trace = math.Inf(1)
	r.Diag.MinEig = math.NaN()
	r.Sequences[0].Steps[0].Prediction = math.NaN()
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("non-finite values gave invalid JSON: %v", err)
	}
	if d := doc["diagnostics"].(map[string]any); d["trace"] != nil || d["min_eigenvalue"] != nil {
		t.Errorf("trace %v min_eigenvalue %v, want null", d["trace"], d["min_eigenvalue"])
	}
}

// TestAppendJSONFloat checks the float writer against encoding/json on
// values of every magnitude around the notation switches, signed zeros,
// subnormals and the extremes.
func TestAppendJSONFloat(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.999999999999999e-7, 1e-7, 1e-9, 1e-10, 1.5e-300,
		5e-324, 1e20, 1e21, 9.999999999999998e20, 1e22, 123456789012345678, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		vals = append(vals, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	n := 0
	for _, x := range vals {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, x); string(got) != string(want) {
			t.Fatalf("%v: %s, encoding/json writes %s", x, got, want)
		}
		n++
	}
	if n < 150000 {
		t.Fatalf("only %d finite values tried", n)
	}
}

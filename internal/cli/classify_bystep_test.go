package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestClassifierSetsByStep: the JSON's coverage of the jackknife+ and
// split-conformal sets by step agrees with the per-forecast sets and
// targets counted here, row by row of the test sequences.
func TestClassifierSetsByStep(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	code, _, errs := runCmd("--model", filepath.Join(classifyDir, "binary_logits.onnx"), "--data", filepath.Join(classifyDir, "train.csv"),
		"--test", filepath.Join(classifyDir, "test.csv"), "--calibration", filepath.Join(classifyDir, "cal.csv"),
		"--loss", "bce-logits", "--ridge", "0.18", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	type cell struct {
		Key      int      `json:"key"`
		N        int      `json:"n"`
		Coverage *float64 `json:"coverage"`
		MeanSize *float64 `json:"mean_size"`
	}
	var d struct {
		Classification struct {
			Jackknife struct {
				ByStep []cell `json:"by_step"`
			} `json:"jackknife_sets"`
			Split struct {
				ByStep []cell `json:"by_step"`
			} `json:"split_conformal_sets"`
		} `json:"classification"`
		Sequences []struct {
			Steps []classStep `json:"steps"`
		} `json:"sequences"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	type tally struct{ n, jk, sp, jkSize int }
	var rows []tally
	for _, s := range d.Sequences {
		for k, st := range s.Steps {
			if st.Target == nil {
				continue
			}
			for len(rows) <= k {
				rows = append(rows, tally{})
			}
			y := int(*st.Target)
			rows[k].n++
			rows[k].jkSize += len(st.Set)
			if slices.Contains(st.Set, y) {
				rows[k].jk++
			}
			if slices.Contains(st.SplitSet, y) {
				rows[k].sp++
			}
		}
	}
	jk, sp := d.Classification.Jackknife.ByStep, d.Classification.Split.ByStep
	if len(rows) == 0 || len(jk) != len(rows) || len(sp) != len(rows) {
		t.Fatalf("by_step has %d and %d rows, the sequences %d", len(jk), len(sp), len(rows))
	}
	for k, r := range rows {
		want := float64(r.jk) / float64(r.n)
		if jk[k].Key != k || jk[k].N != r.n || jk[k].Coverage == nil || math.Abs(*jk[k].Coverage-want) > 1e-12 ||
			math.Abs(*jk[k].MeanSize-float64(r.jkSize)/float64(r.n)) > 1e-12 {
			t.Errorf("row %d: jackknife+ %+v, counted n %d coverage %g", k, jk[k], r.n, want)
		}
		if want := float64(r.sp) / float64(r.n); sp[k].N != r.n || sp[k].Coverage == nil || math.Abs(*sp[k].Coverage-want) > 1e-12 {
			t.Errorf("row %d: split %+v, counted coverage %g", k, sp[k], want)
		}
	}
}

// TestClassifierRecommendedSets: with a calibration set the JSON names
// the recommended kind of sets, with the mean set sizes counted here
// over every forecast, and the choice follows the rule
// (docs/classification.md): jackknife+ LAC sets when their coverage holds
// on the calibration labels and they are no larger, else split conformal;
// for APS sets split conformal, their calibration coverage not measured.
func TestClassifierRecommendedSets(t *testing.T) {
	for _, score := range []string{"lac", "aps"} {
		js := filepath.Join(t.TempDir(), "r.json")
		code, _, errs := runCmd("--model", filepath.Join(classifyDir, "binary_logits.onnx"), "--data", filepath.Join(classifyDir, "train.csv"),
			"--test", filepath.Join(classifyDir, "test.csv"), "--calibration", filepath.Join(classifyDir, "cal.csv"),
			"--loss", "bce-logits", "--ridge", "0.18", "--set-score", score, "--json", js)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", score, code, errs)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Classification struct {
				Rec *struct {
					Kind      string   `json:"kind"`
					CalCov    *float64 `json:"calibration_coverage"`
					Holds     bool     `json:"holds"`
					JackSize  float64  `json:"jackknife_mean_size"`
					SplitSize float64  `json:"split_mean_size"`
				} `json:"recommended_sets"`
			} `json:"classification"`
			Sequences []struct {
				Steps []classStep `json:"steps"`
			} `json:"sequences"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		r := d.Classification.Rec
		if r == nil {
			t.Fatalf("%s: no recommended_sets", score)
		}
		var n, jk, sp float64
		for _, s := range d.Sequences {
			for _, st := range s.Steps {
				n++
				jk += float64(len(st.Set))
				sp += float64(len(st.SplitSet))
			}
		}
		if math.Abs(r.JackSize-jk/n) > 1e-12 || math.Abs(r.SplitSize-sp/n) > 1e-12 {
			t.Errorf("%s: sizes %g and %g, counted %g and %g", score, r.JackSize, r.SplitSize, jk/n, sp/n)
		}
		want := "split conformal"
		if score == "lac" {
			if r.CalCov == nil || !(*r.CalCov > 0 && *r.CalCov <= 1) {
				t.Fatalf("lac: calibration coverage %v", r.CalCov)
			}
			if r.Holds && r.JackSize <= r.SplitSize {
				want = "jackknife+"
			}
		} else if r.CalCov != nil || r.Holds {
			t.Errorf("aps: calibration coverage %v, holds %v: not measured for APS", r.CalCov, r.Holds)
		}
		if r.Kind != want {
			t.Errorf("%s: recommended %q, the rule gives %q (%+v)", score, r.Kind, want, *r)
		}
	}
}

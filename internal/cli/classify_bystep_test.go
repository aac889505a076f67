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

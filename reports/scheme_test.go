package reports

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/datacheck"
)

// TestSchemeText: the advice on the block scheme in words, for each
// shape, with the fix when the scheme in use does not fit; in the notes
// of every report, on the terminal only when it does not fit, and in the
// JSON.
func TestSchemeText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a    datacheck.SchemeAdvice
		want []string
		not  []string
	}{
		{"many, fits", datacheck.SchemeAdvice{Sequences: 39, MedianLength: 11, MaxLength: 11, Lag1: 0.07, Pairs: 368, Used: "sequence", Scheme: "sequence", Shape: datacheck.ShapeMany, Fits: true},
			[]string{"39 sequences (median 11 rows), so sequence blocks fit", "no serial correlation to speak of (lag-1 autocorrelation 0.07 over 368 pairs)"},
			[]string{"This audit used"}},
		{"many, interval used", datacheck.SchemeAdvice{Sequences: 39, MedianLength: 11, MaxLength: 11, Lag1: 0.4, Pairs: 368, Correlated: true, Used: "interval", UsedLength: 3, Scheme: "sequence", Shape: datacheck.ShapeMany},
			[]string{"serially correlated (lag-1 autocorrelation 0.4 over 368 pairs), which sequence blocks allow for", "This audit used interval blocks of 3 steps: use --blocks sequence."}, nil},
		{"one, too short", datacheck.SchemeAdvice{Sequences: 1, MedianLength: 2000, MaxLength: 2000, Lag1: 0.8, Pairs: 1999, Correlated: true, Used: "interval", UsedLength: 3, Scheme: "interval", Shape: datacheck.ShapeOne, SuggestedLength: 14},
			[]string{"one sequence of 2,000 rows, so interval blocks fit", "nested blocks would delete the whole series", "blocks of at least 14 steps reach past that dependence (|0.8|^14 <= 0.05)", "This audit used interval blocks of 3 steps: use --block-length 14 or more."}, nil},
		{"few, sequence used", datacheck.SchemeAdvice{Sequences: 4, MedianLength: 250, MaxLength: 260, Lag1: math.NaN(), Used: "sequence", Scheme: "nested", Alternative: "interval", Shape: datacheck.ShapeFew, SuggestedLength: 1},
			[]string{"4 sequences (median 250 rows), too few to leave out one at a time (sequence blocks are advised from 20 at alpha 0.1), so nested blocks fit, or interval blocks", "serial correlation is not measured", "This audit used sequence blocks: use --blocks nested --block-length 1."}, nil},
	} {
		r := &audit.Result{Setting: audit.Setting{Alpha: 0.1}, Diag: audit.Diagnostics{Scheme: &tc.a}}
		got := schemeText(r)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tc.name, got, w)
			}
		}
		if line := schemeLine(r); (line != "") == tc.a.Fits {
			t.Errorf("%s: terminal line %q with fits %v", tc.name, line, tc.a.Fits)
		}
	}
	if schemeText(&audit.Result{}) != "" {
		t.Error("advice without a SchemeAdvice")
	}

	r := fixture()
	r.Diag.Scheme = &datacheck.SchemeAdvice{Sequences: 12, MedianLength: 8, MaxLength: 8, Lag1: 0.1, Pairs: 84, Used: "sequence", Scheme: "nested", Alternative: "interval", Shape: datacheck.ShapeFew, SuggestedLength: 1}
	found := false
	for _, n := range notes(r) {
		found = found || strings.HasPrefix(n, "Block scheme: the training data are 12 sequences")
	}
	if !found {
		t.Errorf("the notes lack the advice: %q", notes(r))
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scheme *jsonScheme `json:"scheme_advice"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scheme == nil || doc.Scheme.Scheme != "nested" || doc.Scheme.Fits || !strings.HasPrefix(doc.Scheme.Text, "Block scheme:") {
		t.Errorf("JSON scheme_advice: %+v", doc.Scheme)
	}
}

package reports

import (
	"bytes"
	"encoding/csv"
	"testing"
)

// TestCSVNeutralisesFormulas: ids that a spreadsheet would evaluate (the
// OWASP CSV-injection payloads) are written with a quote in front and read
// back as that text; numbers and plain ids are written as they are.
func TestCSVNeutralisesFormulas(t *testing.T) {
	ids := map[string]string{
		"=1+1":                               "'=1+1",
		"+SUM(1+1)*cmd|' /C calc'!A0":        "'+SUM(1+1)*cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0":             "'-2+3+cmd|' /C calc'!A0",
		"@SUM(1+1)*cmd|' /C calc'!A0":        "'@SUM(1+1)*cmd|' /C calc'!A0",
		"=HYPERLINK(\"http://x\",\"click\")": "'=HYPERLINK(\"http://x\",\"click\")",
		"\t=1+1":                             "'\t=1+1",
		"\r=1+1":                             "'\r=1+1",
		"-3":                                 "-3",
		"+1.5e3":                             "+1.5e3",
		"chick 12":                           "chick 12",
		"a=b":                                "a=b",
	}
	r := fixture()
	seq := r.Sequences[0]
	r.Sequences = r.Sequences[:0]
	var order []string
	for id := range ids {
		s := seq
		s.ID = id
		r.Sequences = append(r.Sequences, s)
		order = append(order, id)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	i := 1
	for _, id := range order {
		for range seq.Steps {
			if got, want := recs[i][0], ids[id]; got != want {
				t.Errorf("id %q written as %q, want %q", id, got, want)
			}
			i++
		}
	}
}

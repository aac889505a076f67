package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/internal/serve/servetest"
)

// FuzzRequest checks that any body gives POST /v1/predict's reader (and
// POST /v1/stream's) a dataset or a 400 with one to maxRequestProblems
// short problems, never a panic; that what it accepts is JSON that
// encoding/json accepts, with UTF-8 ids, unique within the request, and
// rows with the model's number of features.
//
//	go test -run '^$' -fuzz FuzzRequest -fuzztime 1m ./internal/serve
func FuzzRequest(f *testing.F) {
	// The test file's first two sequences, as the load test sends them
	// (the whole file, 20 kB, makes the fuzzer's inputs long and slow to
	// minimize).
	for _, targets := range []bool{false, true} {
		b, err := servetest.RequestFromCSV(exTest, targets)
		if err != nil {
			f.Fatal(err)
		}
		var req struct {
			Sequences []json.RawMessage `json:"sequences"`
		}
		if err := json.Unmarshal(b, &req); err != nil || len(req.Sequences) < 2 {
			f.Fatalf("the seed request: %v", err)
		}
		req.Sequences = req.Sequences[:2]
		if b, err = json.Marshal(req); err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	for _, s := range []string{
		`{"sequences": [{"id": "p1", "rows": [{"t": 1, "features": [0.5], "target": 3.1}, {"t": 2, "features": [0.7], "target": 2}]}]}`,
		`{"sequences": [{"id": 7, "rows": [{"features": [0.5]}, {"features": [1e3]}]}, {"id": "b", "rows": [{"t": -1, "features": [0]}]}]}`,
		`{"sequences": [{"id": "a", "rows": [{"t": 3, "features": [0.9]}, {"t": 2, "target": 2.7}]}]}`,
		`{"sequences": [{"id": "\ud83d\ude00", "rows": [{"features": [1]}]}]}`,
		`{"sequences": [{"id": "a\ud800", "rows": [{"features": [1]}]}]}`,
		"{\"sequences\": [{\"id\": \"a\xff\", \"rows\": [{\"features\": [1]}]}]}",
		`{"sequences": [], "sequences": []}`,
		`{"sequences": [{"id": "a", "rows": [{"features": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}]}`,
		`{"sequences": [{"id": "a", "rows": [{"features": [1], "weight": 1}]}]} {}`,
		``,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	h := artifact.Header{IDCol: "id", TimeCol: "t", Features: []string{"x"}, Targets: []string{"y"}}
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		rr := &requestReader{h: h, lim: requestLimits{maxSequences: 50, maxRows: 200}, stream: stream}
		d, err := rr.read(body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.status != 400 || len(re.problems) == 0 || len(re.problems) > maxRequestProblems {
				t.Fatalf("error %v: want a 400 with 1 to %d problems", err, maxRequestProblems)
			}
			for _, p := range re.problems {
				if len(p.Field) > maxField || len(p.Message) > maxMessage || p.Message == "" {
					t.Fatalf("problem of %d+%d bytes: %.300q", len(p.Field), len(p.Message), p.Field+": "+p.Message)
				}
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body encoding/json refuses: %q", body)
		}
		var ids []string
		if stream {
			for _, s := range rr.raw {
				ids = append(ids, s.id)
			}
		} else {
			for _, s := range d.Seqs {
				ids = append(ids, s.ID)
				for _, x := range s.X {
					if len(x) != len(h.Features) {
						t.Fatalf("sequence %q: a row with %d features", s.ID, len(x))
					}
				}
			}
		}
		// U+FFFD in an id is the client's only when the body holds it,
		// as UTF-8 or as an escape in any case of its hex digits.
		sentReplacement := strings.Contains(string(body), "\ufffd") || strings.Contains(strings.ToLower(string(body)), "\\ufffd")
		seen := map[string]bool{}
		for _, id := range ids {
			if !utf8.ValidString(id) || strings.ContainsRune(id, utf8.RuneError) && !sentReplacement || seen[id] || id == "" {
				t.Fatalf("id %q: not UTF-8 as sent, empty or given twice", id)
			}
			seen[id] = true
		}
	})
}

// BenchmarkDecode compares the strict decoder with encoding/json's
// Decode into an any (the decoder it replaced, and its first step) on
// the request of the small example's test file (20 sequences, 100 kB);
// scan is what the strict decoder adds to Decode.
func BenchmarkDecode(b *testing.B) {
	body, err := servetest.RequestFromCSV(exTest, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeStrict(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) { // the strict decoder's addition
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := scanStrict(body, !utf8.Valid(body) || hasSurrogateEscape(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

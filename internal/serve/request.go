package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// The request of POST /v1/predict (documented in the audit serve command's usage and docs/fit-predict-serve.md):
//
//	{"sequences": [{"id": "p1", "rows": [{"t": 1, "features": [0.5, 1.2], "target": 3.1}, ...]}, ...]}
//
// id is a string or a number; t is optional (the row's position, 0, 1, ...,
// when absent) and rows may come in any order of t, as in a CSV file;
// features are the artifact's feature columns in their order (GET /healthz
// lists them); target, the value of the target column at that row, is
// optional but must then be absent (or null) in every row of the request.
// With a shift, as in a CSV file, row t's target is read from row t+shift,
// and a target column that is also a feature is given among the features
// only.

// maxRequestProblems is the number of problems one 4xx answer lists.
const maxRequestProblems = 10

// requestError is a request that cannot be answered: status is the HTTP
// status, problems the fields at fault, each "path: what is wrong".
type requestError struct {
	status   int
	problems []fieldProblem
}

// fieldProblem is one problem of a request: the JSON path of the field
// (sequences[2].rows[5].features) and what is wrong with it.
type fieldProblem struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (e *requestError) Error() string {
	if len(e.problems) == 0 {
		return "bad request"
	}
	p := e.problems[0]
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// requestLimits bound what one request may hold.
type requestLimits struct {
	maxSequences int // sequences per request
	maxRows      int // rows per sequence
}

// requestReader turns a request body into a dataset with the artifact's
// columns, collecting up to maxRequestProblems problems that name their field.
type requestReader struct {
	h        artifact.Header
	lim      requestLimits
	problems []fieldProblem
	// targetFeature is the position of the target column among the
	// features (shifted targets), or -1.
	targetFeature int
	// stream reads a request of POST /v1/stream (servestream.go): t is
	// required, a row may carry only a target (a label for a row sent
	// before), and targets need not be in every row. The sequences are
	// then left in raw, not built into the dataset.
	stream bool
	raw    []*reqSeq
}

// reqSeq is one sequence of a request as sent: its id and its rows in
// the order of t.
type reqSeq struct {
	id   string
	rows []reqRow
}

// reqRow is one row of a request: its step, its features (nil for a
// row of POST /v1/stream that only carries a label), its target value
// when hasY, the JSON path of the row, and whether the target came in
// the "target" field (not from a feature).
type reqRow struct {
	t      float64
	x      []float64
	y      float64
	hasY   bool
	field  string
	target bool
}

// build is the sequence of the rows rs (every row with features), with
// row t's target read from row t+shift and, as the CSV reader records
// them, the first shift rows' own targets in Head (blocks.Continue gives
// them to the training rows a test sequence continues).
func build(id string, rs []reqRow, shift int) *blocks.Sequence {
	T := len(rs)
	s := &blocks.Sequence{ID: id, Steps: make([]float64, T), X: make([][]float64, T), Y: make([][]float64, T)}
	for t, r := range rs {
		s.Steps[t], s.X[t] = r.t, r.x
		if u := t + shift; u >= 0 && u < T && rs[u].hasY {
			s.Y[t] = []float64{rs[u].y}
		}
	}
	if shift > 0 {
		s.Head = make([][]float64, min(shift, T))
		for t := range s.Head {
			if rs[t].hasY {
				s.Head[t] = []float64{rs[t].y}
			}
		}
	}
	return s
}

func (rr *requestReader) fail(field, format string, args ...any) bool {
	if len(rr.problems) < maxRequestProblems {
		rr.problems = append(rr.problems, bounded(fieldProblem{field, fmt.Sprintf(format, args...)}))
	}
	return len(rr.problems) < maxRequestProblems
}

// jsonKind names the JSON type of a decoded value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// number reads a finite number of magnitude at most blocks.MaxValue.
func (rr *requestReader) number(field string, v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		rr.fail(field, "expected a number, got %s", jsonKind(v))
		return 0, false
	}
	x, err := n.Float64()
	if err != nil || math.Abs(x) > blocks.MaxValue {
		rr.fail(field, "%s is beyond %g in magnitude, the largest value rnnaudit takes", clip(n.String(), maxEcho), blocks.MaxValue)
		return 0, false
	}
	return x, true
}

// object checks that v is an object whose keys are all in allowed.
func (rr *requestReader) object(field string, v any, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		rr.fail(field, "expected an object, got %s", jsonKind(v))
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			rr.fail(joinField(field, clip(k, maxEcho)), "unknown field: the fields here are %s", strings.Join(allowed, ", "))
			ok = false
		}
	}
	return m, ok
}

func joinField(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// read decodes body into a dataset. The error is a *requestError.
func (rr *requestReader) read(body []byte) (*blocks.Dataset, error) {
	rr.targetFeature = -1
	if len(rr.h.Targets) == 1 {
		rr.targetFeature = slices.Index(rr.h.Features, rr.h.Targets[0])
	}
	doc, err := decodeStrict(body)
	if err != nil {
		return nil, rr.syntax(body, err)
	}
	top, ok := rr.object("", doc, "sequences")
	if !ok {
		return nil, rr.err()
	}
	raw, present := top["sequences"]
	list, isList := raw.([]any)
	switch {
	case !present:
		rr.fail("sequences", "missing: send {\"sequences\": [{\"id\": ..., \"rows\": [...]}]}")
	case !isList:
		rr.fail("sequences", "expected an array, got %s", jsonKind(raw))
	case len(list) == 0:
		rr.fail("sequences", "empty: send at least one sequence")
	case len(list) > rr.lim.maxSequences:
		rr.fail("sequences", "%d sequences, more than the %d one request may hold (--max-sequences): split them over several requests", len(list), rr.lim.maxSequences)
	}
	if len(rr.problems) > 0 {
		return nil, rr.err()
	}
	d := &blocks.Dataset{File: "request", IDCol: rr.h.IDCol, TimeCol: rr.h.TimeCol, Features: rr.h.Features, Shift: rr.h.Shift}
	seen := map[string]int{}
	labelled := -1 // whether rows carry targets: -1 not yet known, 0 no, 1 yes
	var firstRow string
	for i, v := range list {
		field := fmt.Sprintf("sequences[%d]", i)
		s, ok := rr.sequence(field, v, &labelled, &firstRow)
		if !ok {
			if len(rr.problems) >= maxRequestProblems {
				break
			}
			continue
		}
		if j, dup := seen[s.id]; dup {
			rr.fail(field+".id", "%q is also the id of sequences[%d]: ids must be unique", clip(s.id, maxEcho), j)
			continue
		}
		seen[s.id] = i
		if rr.stream {
			rr.raw = append(rr.raw, s)
		} else {
			d.Seqs = append(d.Seqs, build(s.id, s.rows, rr.h.Shift))
		}
	}
	if len(rr.problems) > 0 {
		return nil, rr.err()
	}
	if rr.stream {
		return nil, nil
	}
	if labelled == 1 {
		d.Targets = slices.Clone(rr.h.Targets)
	} else {
		for _, s := range d.Seqs {
			s.Y, s.Head = nil, nil
		}
	}
	return d, nil
}

// sequence decodes one sequence; labelled and firstRow track whether the
// request's rows carry targets and the first row that said so.
func (rr *requestReader) sequence(field string, v any, labelled *int, firstRow *string) (*reqSeq, bool) {
	m, ok := rr.object(field, v, "id", "rows")
	if !ok {
		return nil, false
	}
	var id string
	switch x := m["id"].(type) {
	case string:
		id = strings.TrimSpace(x)
	case json.Number:
		id = x.String()
	case nil:
		if _, present := m["id"]; !present {
			rr.fail(field+".id", "missing: every sequence needs an id")
			return nil, false
		}
		rr.fail(field+".id", "expected a string or a number, got null")
		return nil, false
	default:
		rr.fail(field+".id", "expected a string or a number, got %s", jsonKind(x))
		return nil, false
	}
	if id == "" {
		rr.fail(field+".id", "empty: every sequence needs an id")
		return nil, false
	}
	rows, isList := m["rows"].([]any)
	switch {
	case !isList:
		if _, present := m["rows"]; !present {
			rr.fail(field+".rows", "missing: every sequence needs its rows")
		} else {
			rr.fail(field+".rows", "expected an array, got %s", jsonKind(m["rows"]))
		}
		return nil, false
	case len(rows) == 0:
		rr.fail(field+".rows", "empty: every sequence needs at least one row")
		return nil, false
	case len(rows) > rr.lim.maxRows:
		rr.fail(field+".rows", "%d rows, more than the %d a sequence may have (--max-rows)", len(rows), rr.lim.maxRows)
		return nil, false
	}
	nf := len(rr.h.Features)
	rs := make([]reqRow, 0, len(rows))
	xs := make([]float64, 0, len(rows)*nf)
	good := true
	for k, rv := range rows {
		rf := fmt.Sprintf("%s.rows[%d]", field, k)
		rm, ok := rr.object(rf, rv, "t", "features", "target")
		if !ok {
			good = false
			continue
		}
		r := reqRow{t: float64(k), field: rf}
		if tv, present := rm["t"]; present && tv != nil {
			if r.t, ok = rr.number(rf+".t", tv); !ok {
				good = false
				continue
			}
		} else if rr.stream {
			rr.fail(rf+".t", "missing: a stream's rows need their step t, which places them after the rows sent before")
			good = false
			continue
		}
		fv, isList := rm["features"].([]any)
		switch {
		case !isList && rr.stream && rr.targetFeature < 0 && rm["features"] == nil && rm["target"] != nil:
			// A label for a row sent before (servestream.go checks that
			// the row is there).
			if r.y, ok = rr.number(rf+".target", rm["target"]); !ok {
				good = false
				continue
			}
			r.hasY, r.target = true, true
			rs = append(rs, r)
			continue
		case !isList:
			if _, present := rm["features"]; !present {
				rr.fail(rf+".features", "missing: expected %s (%s)", plural(nf, "value"), strings.Join(rr.h.Features, ", "))
			} else {
				rr.fail(rf+".features", "expected an array of %s, got %s", plural(nf, "number"), jsonKind(rm["features"]))
			}
			good = false
			continue
		case len(fv) != nf:
			rr.fail(rf+".features", "expected %s (%s), got %d", plural(nf, "value"), strings.Join(rr.h.Features, ", "), len(fv))
			good = false
			continue
		}
		n := len(xs)
		for c, x := range fv {
			f, ok := rr.number(fmt.Sprintf("%s.features[%d]", rf, c), x)
			if !ok {
				good = false
				break
			}
			xs = append(xs, f)
		}
		if len(xs) != n+nf {
			xs = xs[:n]
			continue
		}
		r.x = xs[n : n+nf : n+nf]
		tv, present := rm["target"]
		has := present && tv != nil
		switch {
		case has && rr.targetFeature >= 0:
			rr.fail(rf+".target", "the target column %s is feature %d of the model (shift %d): give its value among the features only", rr.h.Targets[0], rr.targetFeature, rr.h.Shift)
			good = false
			continue
		case rr.targetFeature >= 0:
			r.y, r.hasY = r.x[rr.targetFeature], true
		case has:
			if r.y, ok = rr.number(rf+".target", tv); !ok {
				good = false
				continue
			}
			r.hasY, r.target = true, true
		}
		if rr.targetFeature < 0 && !rr.stream {
			switch want := b2i(r.target); {
			case *labelled < 0:
				*labelled, *firstRow = want, rf
			case *labelled != want && want == 1:
				rr.fail(rf+".target", "given here but not at %s: give a target in every row of the request or in none", *firstRow)
				good = false
				continue
			case *labelled != want:
				rr.fail(rf+".target", "missing here but given at %s: give a target in every row of the request or in none", *firstRow)
				good = false
				continue
			}
		} else {
			*labelled = 1
		}
		rs = append(rs, r)
	}
	if !good {
		return nil, false
	}
	slices.SortStableFunc(rs, func(a, b reqRow) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	for k := 1; k < len(rs); k++ {
		if rs[k].t == rs[k-1].t {
			rr.fail(rs[k].field+".t", "step %g is also the step of %s: steps within a sequence must be unique", rs[k].t, rs[k-1].field)
			return nil, false
		}
	}
	return &reqSeq{id: id, rows: rs}, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// syntax turns a JSON decoding error into a problem naming the byte
// offset, line and column of the body.
func (rr *requestReader) syntax(body []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var fe *fieldErr
	switch {
	case errors.As(err, &fe):
		rr.fail(fieldPath(fe.path), "%s", fe.message)
	case errors.Is(err, errTrailing):
		rr.fail("", "the body holds more than one JSON value: send one object {\"sequences\": [...]}")
	case errors.Is(err, io.EOF):
		rr.fail("", "empty body: send {\"sequences\": [...]} as JSON")
	case errors.As(err, &se):
		line, col := lineCol(body, se.Offset)
		rr.fail("", "malformed JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		rr.fail("", "malformed JSON: %v", te)
	case errors.Is(err, io.ErrUnexpectedEOF):
		rr.fail("", "the JSON ends before its value does: the body is cut short")
	default:
		rr.fail("", "malformed JSON: %v", err)
	}
	return rr.err()
}

// lineCol is the 1-based line and column of byte offset off of b.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(b)))
	pre := b[:off]
	line := 1 + bytes.Count(pre, []byte("\n"))
	col := int(off) - bytes.LastIndexByte(pre, '\n')
	if bytes.LastIndexByte(pre, '\n') < 0 {
		col = int(off)
	}
	return line, max(col, 1)
}

func (rr *requestReader) err() error {
	return &requestError{status: 400, problems: rr.problems}
}

// plural returns "1 value", "5 values".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

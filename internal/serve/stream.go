package serve

import (
	"container/list"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
)

// POST /v1/stream serves series that arrive a few rows at a time, with
// the labels of earlier forecasts fed back as they become known: the server
// keeps every stream's rows (steps, features and the labels received) by
// sequence id, and a request appends its rows to them and gives the new rows'
// forecasts the intervals that a batch audit predict of the stream's rows so
// far gives. The recurrent state runs on over the whole stream (and from a
// training sequence that the stream continues), and the adaptive kinds of a
// fit with --adaptive (adaptive.Online: ACI, AgACI, NexCP, rolling split
// conformal, and the kinds that stay finite, ACI clipped, quantile tracking
// and conformal PID) run along it with every label received: their limits at
// a row depend only on the labels of earlier rows, so they are those of a
// batch predict of the whole labelled series. Each request
// re-runs the stream's rows, so its cost grows with the stream (bounded by
// --max-rows); the streams held are bounded by --max-streams, the least
// recently used dropped first.

// streamStore holds the streams of POST /v1/stream, safe for concurrent
// use.
type streamStore struct {
	mu      sync.Mutex
	max     int // streams held
	maxRows int // rows per stream
	byID    map[string]*list.Element
	lru     *list.List // of *reqSeq, most recently used first
}

func newStreamStore(max, maxRows int) *streamStore {
	return &streamStore{max: max, maxRows: maxRows, byID: map[string]*list.Element{}, lru: list.New()}
}

// merge adds the rows of the request's sequences in to their streams,
// all or none: a row with a step the stream has gives the label of that
// row (its features, if given, must be the stored ones); a row with a
// later step than the stream's last is appended. It returns every
// sequence's stream after the merge (whose rows are never modified
// afterwards: a later merge copies them), the steps each request
// appended, and the number of streams dropped to stay within max.
func (st *streamStore) merge(in []*reqSeq) (streams []*reqSeq, added []map[float64]bool, dropped int, problems []fieldProblem) {
	st.mu.Lock()
	defer st.mu.Unlock()
	streams = make([]*reqSeq, len(in))
	added = make([]map[float64]bool, len(in))
	for i, q := range in {
		field := fmt.Sprintf("sequences[%d]", i)
		var old []reqRow
		if e, ok := st.byID[q.id]; ok {
			old = e.Value.(*reqSeq).rows
		}
		rows, add, ps := mergeRows(field, old, q.rows, st.maxRows)
		if len(ps) > 0 {
			problems = append(problems, ps...)
			continue
		}
		streams[i], added[i] = &reqSeq{id: q.id, rows: rows}, add
	}
	if len(problems) > 0 {
		return nil, nil, 0, problems[:min(len(problems), maxRequestProblems)]
	}
	for _, s := range streams {
		if e, ok := st.byID[s.id]; ok {
			e.Value = s
			st.lru.MoveToFront(e)
			continue
		}
		st.byID[s.id] = st.lru.PushFront(s)
	}
	for st.lru.Len() > st.max {
		e := st.lru.Back()
		delete(st.byID, e.Value.(*reqSeq).id)
		st.lru.Remove(e)
		dropped++
	}
	return streams, added, dropped, nil
}

// count is the number of streams held.
func (st *streamStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lru.Len()
}

// mergeRows merges the request's rows in (ordered by step) into a
// stream's rows old, into a new slice; add are the steps appended.
func mergeRows(field string, old, in []reqRow, maxRows int) (rows []reqRow, add map[float64]bool, problems []fieldProblem) {
	rows = slices.Clone(old)
	add = map[float64]bool{}
	for _, r := range in {
		i, found := slices.BinarySearchFunc(rows, r.t, func(a reqRow, t float64) int {
			switch {
			case a.t < t:
				return -1
			case a.t > t:
				return 1
			}
			return 0
		})
		switch {
		case found && r.x != nil && !slices.Equal(r.x, rows[i].x):
			problems = append(problems, fieldProblem{r.field + ".features", fmt.Sprintf("step %g is in the stream with other features %v: a row is sent once; later requests send only its target", r.t, rows[i].x)})
		case found && r.hasY && rows[i].hasY && r.y != rows[i].y:
			problems = append(problems, fieldProblem{r.field + ".target", fmt.Sprintf("step %g already has the label %g", r.t, rows[i].y)})
		case found:
			if r.hasY {
				rows[i].y, rows[i].hasY = r.y, true
			}
		case r.x == nil:
			problems = append(problems, fieldProblem{r.field, fmt.Sprintf("a label for step %g, which the stream does not have: send the row with its features first", r.t)})
		case i < len(rows):
			problems = append(problems, fieldProblem{r.field + ".t", fmt.Sprintf("step %g is before the stream's last step %g: new rows follow the rows sent before", r.t, rows[len(rows)-1].t)})
		default:
			rows = append(rows, r)
			add[r.t] = true
		}
	}
	if len(rows) > maxRows {
		problems = append(problems, fieldProblem{field + ".rows", fmt.Sprintf("the stream would hold %d rows, more than the %d a sequence may have (--max-rows): start a new id", len(rows), maxRows)})
	}
	return rows, add, problems
}

// streamAnswer is the body of a 200 answer of POST /v1/stream: the
// intervals of the forecasts made at the rows the request appended, and
// what the server holds of each stream.
type streamAnswer struct {
	predictAnswer
	Streams []streamInfo `json:"streams"`
	// Dropped counts the streams dropped to stay within --max-streams.
	Dropped int `json:"dropped"`
}

// streamInfo is what the server holds of one stream.
type streamInfo struct {
	ID       string `json:"id"`
	Rows     int    `json:"rows"`
	Labelled int    `json:"labelled"`
}

func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	body, release, ok := s.admit(w, r)
	if !ok {
		return
	}
	defer release()
	rr := &requestReader{h: s.head, lim: s.limits(), stream: true}
	if _, err := rr.read(body); err != nil {
		var re *requestError
		errors.As(err, &re)
		s.fail(w, re.status, re.problems...)
		return
	}
	streams, added, dropped, problems := s.streams.merge(rr.raw)
	if len(problems) > 0 {
		s.fail(w, http.StatusBadRequest, problems...)
		return
	}
	d := &blocks.Dataset{File: "stream", IDCol: s.head.IDCol, TimeCol: s.head.TimeCol, Features: s.head.Features, Shift: s.head.Shift}
	var infos []streamInfo
	for _, q := range streams {
		d.Seqs = append(d.Seqs, build(q.id, q.rows, s.head.Shift))
		info := streamInfo{ID: q.id, Rows: len(q.rows)}
		for _, row := range q.rows {
			info.Labelled += b2i(row.hasY)
		}
		if info.Labelled > 0 || rr.targetFeature >= 0 {
			d.Targets = slices.Clone(s.head.Targets)
		}
		infos = append(infos, info)
	}
	if d.Targets == nil {
		for _, q := range d.Seqs {
			q.Y, q.Head = nil, nil
		}
	}
	res, ok := s.predictOrFail(w, r, d)
	if !ok {
		return
	}
	// Only the forecasts made at the appended rows are answered: those of
	// earlier rows were answered before and do not change.
	byID := make(map[string]map[float64]bool, len(streams))
	for i, q := range streams {
		byID[q.id] = added[i]
	}
	kept := *res
	kept.Sequences = make([]audit.SequenceResult, len(res.Sequences))
	for i, q := range res.Sequences {
		kept.Sequences[i] = audit.SequenceResult{ID: q.ID, Steps: []audit.StepResult{}}
		for _, st := range q.Steps {
			if byID[q.ID][st.Step] {
				kept.Sequences[i].Steps = append(kept.Sequences[i].Steps, st)
			}
		}
	}
	noteLog(w, "sequences=%d forecasts=%d streams=%d dropped=%d", len(kept.Sequences), forecasts(&kept), s.streams.count(), dropped)
	s.writeJSON(w, http.StatusOK, streamAnswer{predictAnswer: s.answer(&kept), Streams: infos, Dropped: dropped})
}

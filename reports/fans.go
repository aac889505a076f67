package reports

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
)

// FanMode says how FanSelection chooses the sequences drawn as fan
// charts.
type FanMode int

// The ways of choosing fan charts.
const (
	// FanAuto draws up to N sequences (DefaultFanCharts when N is 0):
	// with thresholds, up to half of them those with the most steps whose
	// interval crosses one, the others the first of the file.
	FanAuto FanMode = iota
	// FanFirst draws the first N sequences of the file.
	FanFirst
	// FanAll draws every sequence.
	FanAll
	// FanNone draws none.
	FanNone
	// FanIDs draws the sequences named by IDs, in their order.
	FanIDs
)

// FanSelection chooses the sequences of the HTML and Markdown reports'
// fan charts (the --fan-charts flag). The zero value is FanAuto with
// DefaultFanCharts sequences.
type FanSelection struct {
	Mode FanMode
	N    int      // FanAuto, FanFirst: how many (FanAuto: 0 means DefaultFanCharts)
	IDs  []string // FanIDs: the sequence ids
}

// ParseFanCharts reads a fan-chart selection: "none", "all", "first:N"
// (the first N sequences of the file), "auto:N" or "N" (up to N, those
// that cross the thresholds most first: the default, with N =
// DefaultFanCharts), or a comma-separated list of sequence ids. The
// error says what is wrong and gives the forms.
func ParseFanCharts(s string) (FanSelection, error) {
	s = strings.TrimSpace(s)
	forms := "give none, all, first:N, auto:N or sequence ids separated by commas"
	count := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a positive whole number: %s", v, forms)
		}
		return n, nil
	}
	switch {
	case s == "":
		return FanSelection{}, errors.New("empty: " + forms)
	case s == "none":
		return FanSelection{Mode: FanNone}, nil
	case s == "all":
		return FanSelection{Mode: FanAll}, nil
	case s == "auto":
		return FanSelection{}, nil
	case strings.HasPrefix(s, "first:"):
		n, err := count(strings.TrimPrefix(s, "first:"))
		return FanSelection{Mode: FanFirst, N: n}, err
	case strings.HasPrefix(s, "auto:"):
		n, err := count(strings.TrimPrefix(s, "auto:"))
		return FanSelection{Mode: FanAuto, N: n}, err
	}
	if _, err := strconv.Atoi(s); err == nil {
		n, err := count(s)
		return FanSelection{Mode: FanAuto, N: n}, err
	}
	var ids []string
	seen := map[string]bool{}
	for i, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			return FanSelection{}, fmt.Errorf("id %d of the list is empty: %s", i+1, forms)
		}
		if !seen[id] {
			ids = append(ids, id)
			seen[id] = true
		}
	}
	return FanSelection{Mode: FanIDs, IDs: ids}, nil
}

// Check reports the ids of a FanIDs selection that no evaluated sequence
// has (ids are the evaluated sequences' ids), naming the first few
// sequences there are; nil for the other modes.
func (f FanSelection) Check(ids []string) error {
	if f.Mode != FanIDs {
		return nil
	}
	have := make(map[string]bool, len(ids))
	for _, id := range ids {
		have[id] = true
	}
	var missing []string
	for _, id := range f.IDs {
		if !have[id] {
			missing = append(missing, strconv.Quote(id))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	first := ids[:min(len(ids), 5)]
	return fmt.Errorf("no evaluated sequence has the id %s (the evaluated ids begin %s)",
		strings.Join(missing, ", "), strings.Join(first, ", "))
}

// pick is the indices of the sequences of r the selection draws, in the
// order drawn.
func (f FanSelection) pick(r *audit.Result) []fanSeq {
	n := len(r.Sequences)
	var idx []int
	switch f.Mode {
	case FanNone:
		return nil
	case FanAll:
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	case FanFirst:
		for i := range min(f.N, n) {
			idx = append(idx, i)
		}
	case FanIDs:
		where := make(map[string]int, n)
		for i := len(r.Sequences) - 1; i >= 0; i-- {
			where[r.Sequences[i].ID] = i
		}
		for _, id := range f.IDs {
			if i, ok := where[id]; ok {
				idx = append(idx, i)
			}
		}
	default:
		k := f.N
		if k == 0 {
			k = DefaultFanCharts
		}
		return pickFans(r, k)
	}
	out := make([]fanSeq, len(idx))
	for k, i := range idx {
		out[k] = fanSeq{index: i, flags: flaggedSteps(r, &r.Sequences[i])}
	}
	return out
}

// describe says in words which sequences the charts show.
func (f FanSelection) describe(r *audit.Result) string {
	switch f.Mode {
	case FanAll:
		return "Every sequence is shown."
	case FanFirst:
		return "The sequences shown are the first of the file."
	case FanIDs:
		return "The sequences shown are those the --fan-charts option named."
	}
	if r.Setting.Low != nil || r.Setting.High != nil {
		return "Up to half of the sequences shown are those with the most steps whose interval crosses a threshold; the others are the first of the file."
	}
	return "The sequences shown are the first of the file."
}

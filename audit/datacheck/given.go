package datacheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// ErrCalibrationOverlap is wrapped by Overlap's error: the calibration
// set shares sequences with the training data (by id or by content) or
// with the test data (by content). A calibration set must be held out, or
// its coverage guarantee does not hold.
var ErrCalibrationOverlap = errors.New("calibration data overlaps")

// overlapError is a message that wraps ErrCalibrationOverlap without
// repeating its text.
type overlapError struct{ msg string }

func (e *overlapError) Error() string        { return e.msg }
func (e *overlapError) Is(target error) bool { return target == ErrCalibrationOverlap }

// Overlap returns a *blocks.DataError wrapping ErrCalibrationOverlap on
// the first calibration sequence that is also in other
// (blocks.Repeats): with the same rows, or (byID) with the same id.
func Overlap(cal, other *blocks.Dataset, byID bool) error {
	reps := blocks.Repeats(cal, other, byID)
	if len(reps) == 0 {
		return nil
	}
	role := "training"
	if !byID {
		role = "test"
	}
	r, s := reps[0], cal.Seqs[reps[0].Seq]
	first := fmt.Sprintf("calibration sequence %q has the same steps and features as %s sequence %q (%s%s)", s.ID, role, other.Seqs[r.Other].ID, other.File, lineOf(other, r.Other))
	if r.SameID {
		first = fmt.Sprintf("calibration sequence %q has the id of a %s sequence (%s%s)", s.ID, role, other.File, lineOf(other, r.Other))
	}
	line := 0
	if len(s.Lines) > 0 {
		line = s.Lines[0]
	}
	more := ""
	if len(reps) > 1 {
		more = fmt.Sprintf(", and %d more calibration sequences overlap", len(reps)-1)
	}
	what := "a calibration set must be held out from training, or its coverage guarantee does not hold: remove these sequences from the calibration file, or give them other ids if they are in fact different sequences"
	if !byID {
		what = "calibration and test sequences must be different sequences, or the measured coverage says nothing: remove these sequences from one of the files"
	}
	return &blocks.DataError{File: cal.File, Line: line, Err: &overlapError{fmt.Sprintf("%s%s; %s", first, more, what)}}
}

// lineOf is " line N" for sequence j of d, or "".
func lineOf(d *blocks.Dataset, j int) string {
	if s := d.Seqs[j]; len(s.Lines) > 0 {
		return fmt.Sprintf(" line %d", s.Lines[0])
	}
	return ""
}

// ContinuedNote names the sequences of eval that continue a training
// sequence (blocks.Continue), or is "" when none does.
func ContinuedNote(eval *blocks.Dataset) string {
	var ids []string
	for _, q := range eval.Seqs {
		if q.Context > 0 {
			ids = append(ids, q.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("%d test sequence(s) continue a training sequence (same id, later steps: %s): the model reads the training rows first and the test rows start from the state they leave; their rows are counted from the training sequence's first row (--restart starts them at row 0).",
		len(ids), elideIDs(ids, 5))
}

// elideIDs joins at most most ids, then says how many more there are.
func elideIDs(ids []string, most int) string {
	if len(ids) <= most {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:most], ", "), len(ids)-most)
}

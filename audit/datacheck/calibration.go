package datacheck

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Calibration checks a calibration set against the training and test
// data: labelled, with their columns, and disjoint from both (an overlap
// wraps ErrCalibrationOverlap). Conformal guarantees hold only for
// calibration sequences that neither trained the model nor are judged by
// it. With stretches (a windowed audit), a calibration sequence may be a
// later stretch of a training series (Stretches).
func Calibration(train, test, cal *blocks.Dataset, stretches bool) error {
	if test == nil {
		return fmt.Errorf("audit: the calibration set %s needs test data: conformal intervals are for new sequences, while an audit without test data evaluates the training sequences, which their guarantee does not cover; give the test data too", cal.File)
	}
	if err := CalibrationTrain(train, cal, stretches); err != nil {
		return err
	}
	return Overlap(cal, test, false)
}

// CalibrationTrain checks a calibration set against the training data
// only (what a fit without test data can check): labelled, with its
// columns, and disjoint from it; with stretches, a later stretch of a
// training series is not an overlap (Stretches).
func CalibrationTrain(train, cal *blocks.Dataset, stretches bool) error {
	if cal.Len() == 0 {
		return fmt.Errorf("audit: the calibration set %s has no sequences", cal.File)
	}
	if !cal.Labelled() {
		return &blocks.DataError{File: cal.File, Line: 1, Err: fmt.Errorf("the calibration file has no target column %v: calibration needs the observed values", train.Targets)}
	}
	if err := blocks.CheckCompatible(train, cal); err != nil {
		return err
	}
	if stretches {
		cal = Stretches(train, cal)
	}
	return Overlap(cal, train, true)
}

// Stretches returns cal without its later stretches of training series:
// the sequences with a training sequence's id whose first step comes after
// that sequence's last (the calibration period of a series whose earlier
// rows trained the model, which a windowed audit continues from them,
// blocks.ContinueThrough). What remains must not overlap the training
// data.
func Stretches(train, cal *blocks.Dataset) *blocks.Dataset {
	last := make(map[string]float64, len(train.Seqs))
	for _, s := range train.Seqs {
		if n := s.Len(); n > 0 {
			last[s.ID] = s.Steps[n-1]
		}
	}
	out := *cal
	out.Seqs = nil
	for _, s := range cal.Seqs {
		if l, ok := last[s.ID]; !ok || s.Len() == 0 || !(s.Steps[0] > l) {
			out.Seqs = append(out.Seqs, s)
		}
	}
	return &out
}

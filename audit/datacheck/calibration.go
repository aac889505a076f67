package datacheck

import (
	"fmt"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// Calibration checks a calibration set against the training and test
// data: labelled, with their columns, and disjoint from both (an overlap
// wraps ErrCalibrationOverlap). Conformal guarantees hold only for
// calibration sequences that neither trained the model nor are judged by
// it.
func Calibration(train, test, cal *blocks.Dataset) error {
	if test == nil {
		return fmt.Errorf("audit: the calibration set %s needs test data: conformal intervals are for new sequences, while an audit without test data evaluates the training sequences, which their guarantee does not cover; give the test data too", cal.File)
	}
	if err := CalibrationTrain(train, cal); err != nil {
		return err
	}
	return Overlap(cal, test, false)
}

// CalibrationTrain checks a calibration set against the training data
// only (what a fit without test data can check): labelled, with its
// columns, and disjoint from it.
func CalibrationTrain(train, cal *blocks.Dataset) error {
	if cal.Len() == 0 {
		return fmt.Errorf("audit: the calibration set %s has no sequences", cal.File)
	}
	if !cal.Labelled() {
		return &blocks.DataError{File: cal.File, Line: 1, Err: fmt.Errorf("the calibration file has no target column %v: calibration needs the observed values", train.Targets)}
	}
	if err := blocks.CheckCompatible(train, cal); err != nil {
		return err
	}
	return Overlap(cal, train, true)
}

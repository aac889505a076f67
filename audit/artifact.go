package audit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/table"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// fitBody is the artifact's body: everything Predict reads, written
// and read by package artifact (artifact.Version describes the layout).
// It and its records stay in package audit under these names: gob
// writes each record's type name into the body, a slice's with its
// package ("[]audit.fitEntries"), so renaming or moving them would change
// the bytes Save writes.
type fitBody struct {
	Options     Options
	Model       ModelInfo
	Setting     Setting
	Estimator   Estimator
	Damping     float64
	Notes       []string
	Diag        Diagnostics
	Warnings    []Warning
	Influential []InfluenceEntry
	// Delta and Entries are the "steps" representation.
	Delta   []f64s
	Entries []fitEntries
	// Table, Basis (k×P, row-major), Slots and Shift are the "low-rank"
	// representation.
	Table *fitTable
	Basis f64s
	Slots []fitSlot
	Shift f64s
	Naive []fitNaive
	Cal   *fitCal
	// Low and High are Options.Low and High as zero or one value: gob
	// drops a pointer to zero.
	Low, High []float64
	// Context holds the training sequences' input rows that Predict
	// continues; nil when the fit restarts every sequence.
	Context *fitContext
	// Lens are the lengths of the float64 arrays (arrays), whose values
	// follow the gob body raw (artifact.Write).
	Lens []int
}

// bound is b as zero or one value.
func bound(b *float64) []float64 {
	if b == nil {
		return nil
	}
	return []float64{*b}
}

// unbound is bound's inverse.
func unbound(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	return &v[0]
}

// fitEntries are the leave-one-block-out residuals of one forecast.
type fitEntries struct {
	T, H     int
	Blk, Seq []int
	R        f64s
}

// fitTable is a table.BlockTable without a sketch (KS 0) in the artifact.
type fitTable struct {
	N, K, F   int
	Coef, Res f64s
}

// f64s are the float64 arrays of an artifact. Save moves them to the raw
// section after the gob body (detach, artifact.Write), so gob sees them empty;
// their gob encoding (raw little-endian bytes, every bit kept) is for
// any left in it.
type f64s []float64

// GobEncode implements gob.GobEncoder.
func (v f64s) GobEncode() ([]byte, error) { return artifact.EncodeFloats(v), nil }

// GobDecode implements gob.GobDecoder.
func (v *f64s) GobDecode(b []byte) error {
	out, err := artifact.DecodeFloats(b)
	if err != nil {
		return err
	}
	*v = out
	return nil
}

// fitSlot is the forecast of a slot of the low-rank block table.
type fitSlot struct{ T, H int }

// fitNaive are the in-sample residuals of one forecast.
type fitNaive struct {
	T, H int
	R    f64s
}

// fitCal is calFit in the artifact.
type fitCal struct {
	File         string
	Seqs         int
	T, H         []int
	Pred, Y      []float64
	Has          []bool
	Lower, Upper []float64
	Spread       []float64 // limits.sd; absent in artifacts of earlier versions
}

// fitContext is artifact.Training in the body.
type fitContext struct {
	IDs      []string
	Lens     []int
	Steps, X f64s
}

// Save writes the fit as an artifact of artifact.Version (see there) for
// Load; modelSHA256 is the SHA-256 of the model file the fit was made
// with, which Load checks.
func (f *Fitted) Save(w io.Writer, modelSHA256 [32]byte) error {
	b := fitBody{Options: f.opt, Model: f.model, Setting: f.setting, Estimator: f.inf.estimator, Damping: f.inf.damping,
		Notes: f.inf.notes, Diag: f.inf.diag, Warnings: f.inf.warnings, Influential: f.influential,
		Low: bound(f.opt.Low), High: bound(f.opt.High)}
	b.Options.Calibration, b.Options.Progress, b.Options.Executor = nil, nil, nil
	h := f.header(modelSHA256)
	switch r := f.inf.rep.(type) {
	case *stepsRep:
		if f.inf.delta == nil {
			return errors.New("audit: save: the fit holds no leave-one-block-out steps")
		}
		h.Representation, h.Blocks = artifact.Steps, len(f.inf.delta)
		b.Delta = make([]f64s, len(f.inf.delta))
		for k, d := range f.inf.delta {
			b.Delta[k] = d
		}
		for _, fc := range sortedForecasts(r.loo.entries) {
			e := fitEntries{T: fc.T, H: fc.H}
			for _, en := range r.loo.entries[fc] {
				e.Blk, e.Seq, e.R = append(e.Blk, en.Blk), append(e.Seq, en.Seq), append(e.R, en.R)
			}
			b.Entries = append(b.Entries, e)
		}
	case *tableRep:
		if r.basis == nil || r.basis.KS() != 0 || r.table.KS != 0 {
			return errors.New("audit: save: the low-rank fit keeps no basis (or a sketch, which artifacts do not hold)")
		}
		h.Representation, h.Rank, h.Blocks = artifact.LowRank, r.basis.K(), r.table.N
		b.Table = &fitTable{N: r.table.N, K: r.table.K, F: r.table.F, Coef: r.table.Coef, Res: r.table.Res}
		b.Basis, b.Shift = r.basis.U, r.shift
		b.Slots = make([]fitSlot, len(r.slots))
		for fc, i := range r.slots {
			b.Slots[i] = fitSlot{fc.T, fc.H}
		}
	default:
		return fmt.Errorf("audit: save: a fit of the %s solver cannot be saved", f.setting.Solver)
	}
	for _, fc := range sortedForecasts(f.naive) {
		b.Naive = append(b.Naive, fitNaive{T: fc.T, H: fc.H, R: f.naive[fc]})
	}
	if c := f.cal; c != nil {
		fc := &fitCal{File: c.file, Seqs: c.seqs, Lower: c.lim.lo, Upper: c.lim.up, Spread: c.lim.sd}
		for _, pt := range c.points {
			fc.T, fc.H = append(fc.T, pt.f.T), append(fc.H, pt.f.H)
			fc.Pred, fc.Y, fc.Has = append(fc.Pred, pt.pred), append(fc.Y, pt.y), append(fc.Has, pt.has)
		}
		b.Cal = fc
	}
	if !f.opt.Restart {
		if c := artifact.TrainingOf(f.train); c != nil {
			b.Context = &fitContext{IDs: c.IDs, Lens: c.Lens, Steps: c.Steps, X: c.X}
		}
	}
	raw := b.detach()
	if err := artifact.Write(w, h, &b, raw); err != nil {
		return fmt.Errorf("audit: save: %w", err)
	}
	return nil
}

// header is the artifact header of f.
func (f *Fitted) header(sum [32]byte) artifact.Header {
	return artifact.Header{Format: artifact.FormatName, Version: artifact.Version, ModelSHA256: hex.EncodeToString(sum[:]),
		ModelPath: f.opt.ModelPath, Output: f.opt.Output, Inputs: f.opt.Inputs, Horizons: f.opt.Horizons, IDCol: f.train.IDCol, TimeCol: f.train.TimeCol, Params: f.opt.Params, Layout: f.opt.Layout.String(), TrainFile: f.train.File, Features: f.train.Features,
		Targets: f.train.Targets, Shift: f.train.Shift, Solver: f.setting.Solver, Parameters: len(f.theta)}
}

// Load reads an artifact of Save for the model it was fitted with, whose
// file has the SHA-256 modelSHA256; it refuses an artifact of another
// format version or another model. Predict then checks the feature
// columns of the data against the artifact's.
func Load(r io.Reader, model *graph.Graph, modelSHA256 [32]byte) (*Fitted, error) {
	c, err := artifact.Read(r)
	if err != nil {
		return nil, fmt.Errorf("audit: load: %w", err)
	}
	h := c.Header
	if got := hex.EncodeToString(modelSHA256[:]); got != h.ModelSHA256 {
		return nil, fmt.Errorf("audit: load: the artifact was fitted with the model of SHA-256 %s, this model's is %s: give the model it was fitted with, or fit again", h.ModelSHA256, got)
	}
	var b fitBody
	if err := c.Decode(&b); err != nil {
		return nil, fmt.Errorf("audit: load: body: %w", err)
	}
	if err := b.attach(c); err != nil {
		return nil, fmt.Errorf("audit: load: %w", err)
	}
	train := &blocks.Dataset{File: h.TrainFile, IDCol: h.IDCol, TimeCol: h.TimeCol, Features: h.Features, Targets: h.Targets, Shift: h.Shift}
	o, g := b.Options, model
	o.Low, o.High = unbound(b.Low), unbound(b.High)
	if a := o.Adaptive; a != nil { // an artifact older than an adaptive option has it 0: its default
		if d, err := a.WithDefaults(o.Alpha); err == nil {
			o.Adaptive = &d
		}
	}
	b.Setting.Low, b.Setting.High = o.Low, o.High
	if o.Params != "" {
		keep, err := graph.ParamPattern(o.Params)
		if err != nil {
			return nil, errs.Wrapf(err, "audit: load: ")
		}
		if g, err = g.Restrict(keep); err != nil {
			return nil, fmt.Errorf("audit: load: parameter pattern %q: %w", o.Params, err)
		}
	}
	if o.Classify != nil && o.Classify.Logits {
		if g, err = classify.WithSigmoid(g); err != nil {
			return nil, err
		}
	}
	if b.Options.Output != h.Output || b.Options.Horizons != h.Horizons || b.Options.Params != h.Params {
		return nil, errors.New("audit: load: the header and the body disagree on the model's output, horizons or parameters: the file is damaged")
	}
	f := &Fitted{opt: o, g: g, theta: g.Theta(), train: train, model: b.Model, setting: b.Setting, influential: b.Influential}
	if len(f.theta) != h.Parameters {
		return nil, fmt.Errorf("audit: load: the artifact was fitted on %d parameters, the model has %d: load the model with the output the fit used (%q)", h.Parameters, len(f.theta), h.Output)
	}
	if f.io, err = modelio.New(g, ioConfig(&o), h.Features); err != nil {
		return nil, errs.Wrapf(err, "audit: load: ")
	}
	f.inf = &influence{estimator: b.Estimator, damping: b.Damping, notes: b.Notes, diag: b.Diag, warnings: b.Warnings}
	switch h.Representation {
	case artifact.Steps:
		if err := f.loadSteps(&h, &b); err != nil {
			return nil, err
		}
	case artifact.LowRank:
		if err := f.loadTable(&h, &b); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("audit: load: representation %q: the file is damaged", h.Representation)
	}
	f.naive = map[forecast][]float64{}
	for _, n := range b.Naive {
		f.naive[forecast{T: n.T, H: n.H}] = n.R
	}
	if c := b.Cal; c != nil {
		n := len(c.T)
		if len(c.H) != n || len(c.Pred) != n || len(c.Y) != n || len(c.Has) != n || len(c.Lower) != n || len(c.Upper) != n {
			return nil, errors.New("audit: load: calibration lists of unequal lengths: the file is damaged")
		}
		if c.Spread != nil && len(c.Spread) != n {
			return nil, errors.New("audit: load: calibration lists of unequal lengths: the file is damaged")
		}
		cf := &calFit{file: c.File, seqs: c.Seqs, lim: limits{lo: c.Lower, up: c.Upper, sd: c.Spread}}
		for i := range n {
			cf.points = append(cf.points, point{f: forecast{T: c.T[i], H: c.H[i]}, pred: c.Pred[i], y: c.Y[i], has: c.Has[i]})
		}
		f.cal = cf
	}
	if b.Context != nil {
		c := &artifact.Training{IDs: b.Context.IDs, Lens: b.Context.Lens, Steps: b.Context.Steps, X: b.Context.X}
		if train.Seqs, err = c.Sequences(len(h.Features)); err != nil {
			return nil, fmt.Errorf("audit: load: %w", err)
		}
	}
	return f, nil
}

// loadSteps reads the "steps" representation of b into f.
func (f *Fitted) loadSteps(h *artifact.Header, b *fitBody) error {
	if len(b.Delta) != h.Blocks || slices.ContainsFunc(b.Delta, func(d f64s) bool { return len(d) != len(f.theta) || !artifact.Finite(d) }) {
		return fmt.Errorf("audit: load: the artifact has %d blocks of %d parameters (finite), the model %d parameters: the file is damaged", h.Blocks, h.Parameters, len(f.theta))
	}
	f.inf.delta = make([][]float64, len(b.Delta))
	for k, d := range b.Delta {
		f.inf.delta[k] = d
	}
	loo := &looResiduals{entries: map[forecast][]interval.Residual{}}
	for _, e := range b.Entries {
		if len(e.Blk) != len(e.R) || len(e.Seq) != len(e.R) {
			return errors.New("audit: load: residual lists of unequal lengths: the file is damaged")
		}
		es := make([]interval.Residual, len(e.R))
		for i := range es {
			if e.Blk[i] < 0 || e.Blk[i] >= h.Blocks {
				return fmt.Errorf("audit: load: a residual of block %d of %d: the file is damaged", e.Blk[i], h.Blocks)
			}
			es[i] = interval.Residual{Blk: e.Blk[i], Seq: e.Seq[i], R: e.R[i]}
		}
		loo.entries[forecast{T: e.T, H: e.H}] = es
	}
	f.loo = loo
	f.inf.rep = &stepsRep{inf: f.inf, loo: loo}
	return nil
}

// loadTable reads the "low-rank" representation of b into f.
func (f *Fitted) loadTable(h *artifact.Header, b *fitBody) error {
	ft, P := b.Table, len(f.theta)
	if ft == nil {
		return errors.New("audit: load: a low-rank artifact without its table: the file is damaged")
	}
	t := &table.BlockTable{N: ft.N, K: ft.K, F: ft.F, Coef: ft.Coef, Res: ft.Res}
	if t.N != h.Blocks || t.K != h.Rank || t.F != len(b.Slots) || len(t.Coef) != t.N*t.K ||
		len(t.Res) != t.N*t.F || len(b.Basis) != t.K*P || len(b.Shift) != t.N || !artifact.Finite(t.Coef) || !artifact.Finite(b.Basis) {
		return fmt.Errorf("audit: load: the low-rank table does not match %d blocks of rank %d over %d parameters (finite): the file is damaged", h.Blocks, h.Rank, P)
	}
	slots := make(map[forecast]int, len(b.Slots))
	for i, sl := range b.Slots {
		slots[forecast{T: sl.T, H: sl.H}] = i
	}
	f.loo = &looResiduals{shift: b.Shift}
	f.inf.rep = &tableRep{table: t, shift: b.Shift, basis: &table.ShiftBasis{P: P, U: b.Basis}, slots: slots}
	return nil
}

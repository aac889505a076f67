package audit

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
)

// FormatVersion is the version of the fitted-audit artifact that Save
// writes and Load reads. The artifact is:
//
//	magic     the 14 bytes "rnnaudit-fit\r\n"
//	version   uint32, little-endian
//	length    uint32, little-endian: the header's length in bytes
//	header    JSON (ArtifactHeader): the model's SHA-256 and path, the
//	          parameter pattern, the layout, the training file's id, time,
//	          feature and target columns and shift, the solver, the number
//	          of blocks and parameters
//	body      gzip of a Go gob of the fit: the options after defaults,
//	          the description of model and setting, the diagnostics and
//	          warnings of the influence phase, per block its step in
//	          parameter space (float64), the leave-one-block-out residuals
//	          by forecast (block, sequence, residual), the in-sample
//	          residuals by forecast, and the calibration points
//	          (forecast, prediction, target) with their jackknife+ limits
//
// A reader that knows the version can read the header without Go; the
// body is for Load. Any change to either is a new version.
const FormatVersion = 1

// artifactMagic opens every artifact.
const artifactMagic = "rnnaudit-fit\r\n"

// ArtifactHeader is the artifact's readable header: what Load checks
// before it reads the body.
type ArtifactHeader struct {
	Format      string   `json:"format"`
	Version     int      `json:"version"`
	ModelSHA256 string   `json:"model_sha256"`
	ModelPath   string   `json:"model_path,omitempty"`
	Params      string   `json:"params,omitempty"`
	Layout      string   `json:"layout"`
	TrainFile   string   `json:"train_file"`
	IDCol       string   `json:"id_col"`
	TimeCol     string   `json:"time_col"`
	Features    []string `json:"features"`
	Targets     []string `json:"targets"`
	Shift       int      `json:"shift"`
	Solver      string   `json:"solver"`
	Blocks      int      `json:"blocks"`
	Parameters  int      `json:"parameters"`
}

// fitBody is the artifact's body: everything Predict reads.
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
	Delta       [][]float64
	Entries     []fitEntries
	Naive       []fitNaive
	Cal         *fitCal
	// Low and High are Options.Low and High as zero or one value: gob
	// drops a pointer to zero.
	Low, High []float64
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
	R        []float64
}

// fitNaive are the in-sample residuals of one forecast.
type fitNaive struct {
	T, H int
	R    []float64
}

// fitCal is calFit in the artifact.
type fitCal struct {
	File         string
	Seqs         int
	T, H         []int
	Pred, Y      []float64
	Has          []bool
	Lower, Upper []float64
}

// Save writes the fit as an artifact of FormatVersion (see there) for
// Load; modelSHA256 is the SHA-256 of the model file the fit was made
// with, which Load checks.
func (f *Fitted) Save(w io.Writer, modelSHA256 [32]byte) error {
	r, ok := f.inf.rep.(*stepsRep)
	if !ok || f.inf.delta == nil {
		return errors.New("audit: save: only fits with steps in parameter space (the exact, dual, CG and LiSSA solvers) can be saved")
	}
	h := f.header(modelSHA256)
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("audit: save: header: %w", err)
	}
	b := fitBody{Options: f.opt, Model: f.model, Setting: f.setting, Estimator: f.inf.estimator, Damping: f.inf.damping,
		Notes: f.inf.notes, Diag: f.inf.diag, Warnings: f.inf.warnings, Influential: f.influential, Delta: f.inf.delta,
		Low: bound(f.opt.Low), High: bound(f.opt.High)}
	b.Options.Calibration, b.Options.Progress = nil, nil
	for _, fc := range sortedForecasts(r.loo.entries) {
		e := fitEntries{T: fc.T, H: fc.H}
		for _, en := range r.loo.entries[fc] {
			e.Blk, e.Seq, e.R = append(e.Blk, en.blk), append(e.Seq, en.seq), append(e.R, en.r)
		}
		b.Entries = append(b.Entries, e)
	}
	for _, fc := range sortedForecasts(f.naive) {
		b.Naive = append(b.Naive, fitNaive{T: fc.T, H: fc.H, R: f.naive[fc]})
	}
	if c := f.cal; c != nil {
		fc := &fitCal{File: c.file, Seqs: c.seqs, Lower: c.lim.lo, Upper: c.lim.up}
		for _, pt := range c.points {
			fc.T, fc.H = append(fc.T, pt.f.T), append(fc.H, pt.f.H)
			fc.Pred, fc.Y, fc.Has = append(fc.Pred, pt.pred), append(fc.Y, pt.y), append(fc.Has, pt.has)
		}
		b.Cal = fc
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(artifactMagic)
	binary.Write(bw, binary.LittleEndian, uint32(FormatVersion))
	binary.Write(bw, binary.LittleEndian, uint32(len(hj)))
	bw.Write(hj)
	zw := gzip.NewWriter(bw)
	if err := gob.NewEncoder(zw).Encode(&b); err != nil {
		return fmt.Errorf("audit: save: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("audit: save: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("audit: save: %w", err)
	}
	return nil
}

// header is the artifact header of f.
func (f *Fitted) header(sum [32]byte) ArtifactHeader {
	return ArtifactHeader{Format: "rnnaudit fitted audit", Version: FormatVersion, ModelSHA256: hex.EncodeToString(sum[:]),
		ModelPath: f.opt.ModelPath, IDCol: f.train.IDCol, TimeCol: f.train.TimeCol, Params: f.opt.Params, Layout: f.opt.Layout.String(), TrainFile: f.train.File, Features: f.train.Features,
		Targets: f.train.Targets, Shift: f.train.Shift, Solver: f.setting.Solver, Blocks: len(f.inf.delta), Parameters: len(f.theta)}
}

// ReadHeader reads an artifact's magic, version and header, refusing
// another format or version.
func ReadHeader(r io.Reader) (ArtifactHeader, error) {
	var h ArtifactHeader
	magic := make([]byte, len(artifactMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != artifactMagic {
		return h, errors.New("not a fitted audit (written by audit fit --save)")
	}
	var version, n uint32
	if err := binary.Read(r, binary.LittleEndian, &version); err != nil {
		return h, fmt.Errorf("truncated header: %w", err)
	}
	if version != FormatVersion {
		return h, fmt.Errorf("format version %d, this audit reads version %d: fit again with this version", version, FormatVersion)
	}
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return h, fmt.Errorf("truncated header: %w", err)
	}
	if n > 1<<26 {
		return h, fmt.Errorf("header of %d bytes: the file is damaged", n)
	}
	hj := make([]byte, n)
	if _, err := io.ReadFull(r, hj); err != nil {
		return h, fmt.Errorf("truncated header: %w", err)
	}
	if err := json.Unmarshal(hj, &h); err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	return h, nil
}

// Load reads an artifact of Save for the model it was fitted with, whose
// file has the SHA-256 modelSHA256; it refuses an artifact of another
// format version or another model. Predict then checks the feature
// columns of the data against the artifact's.
func Load(r io.Reader, model *graph.Graph, modelSHA256 [32]byte) (*Fitted, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return nil, fmt.Errorf("audit: load: %w", err)
	}
	if got := hex.EncodeToString(modelSHA256[:]); got != h.ModelSHA256 {
		return nil, fmt.Errorf("audit: load: the artifact was fitted with the model of SHA-256 %s, this model's is %s: give the model it was fitted with, or fit again", h.ModelSHA256, got)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("audit: load: body: %w", err)
	}
	var b fitBody
	if err := gob.NewDecoder(zr).Decode(&b); err != nil {
		return nil, fmt.Errorf("audit: load: body: %w", err)
	}
	train := &blocks.Dataset{File: h.TrainFile, IDCol: h.IDCol, TimeCol: h.TimeCol, Features: h.Features, Targets: h.Targets, Shift: h.Shift}
	o, g := b.Options, model
	o.Low, o.High = unbound(b.Low), unbound(b.High)
	b.Setting.Low, b.Setting.High = o.Low, o.High
	if o.Params != "" {
		keep, err := graph.ParamPattern(o.Params)
		if err != nil {
			return nil, fmt.Errorf("audit: load: %w", err)
		}
		if g, err = g.Restrict(keep); err != nil {
			return nil, fmt.Errorf("audit: load: parameter pattern %q: %w", o.Params, err)
		}
	}
	f := &Fitted{opt: o, g: g, theta: g.Theta(), train: train, model: b.Model, setting: b.Setting, influential: b.Influential}
	if len(f.theta) != h.Parameters || len(b.Delta) != h.Blocks || slices.ContainsFunc(b.Delta, func(d []float64) bool { return d != nil && len(d) != len(f.theta) }) {
		return nil, fmt.Errorf("audit: load: the artifact has %d blocks of %d parameters, the model %d parameters: the file is damaged", h.Blocks, h.Parameters, len(f.theta))
	}
	if f.io, err = newModelIO(g, &o, h.Features); err != nil {
		return nil, fmt.Errorf("audit: load: %w", err)
	}
	f.inf = &influence{delta: b.Delta, estimator: b.Estimator, damping: b.Damping, notes: b.Notes, diag: b.Diag, warnings: b.Warnings}
	loo := &looResiduals{entries: map[forecast][]entry{}}
	for _, e := range b.Entries {
		if len(e.Blk) != len(e.R) || len(e.Seq) != len(e.R) {
			return nil, errors.New("audit: load: residual lists of unequal lengths: the file is damaged")
		}
		es := make([]entry, len(e.R))
		for i := range es {
			es[i] = entry{blk: e.Blk[i], seq: e.Seq[i], r: e.R[i]}
		}
		loo.entries[forecast{e.T, e.H}] = es
	}
	f.loo = loo
	f.inf.rep = &stepsRep{inf: f.inf, loo: loo}
	f.naive = map[forecast][]float64{}
	for _, n := range b.Naive {
		f.naive[forecast{n.T, n.H}] = n.R
	}
	if c := b.Cal; c != nil {
		n := len(c.T)
		if len(c.H) != n || len(c.Pred) != n || len(c.Y) != n || len(c.Has) != n || len(c.Lower) != n || len(c.Upper) != n {
			return nil, errors.New("audit: load: calibration lists of unequal lengths: the file is damaged")
		}
		cf := &calFit{file: c.File, seqs: c.Seqs, lim: limits{lo: c.Lower, up: c.Upper}}
		for i := range n {
			cf.points = append(cf.points, point{f: forecast{c.T[i], c.H[i]}, pred: c.Pred[i], y: c.Y[i], has: c.Has[i]})
		}
		f.cal = cf
	}
	return f, nil
}

// sortedForecasts are the keys of m by row, then horizon.
func sortedForecasts[V any](m map[forecast]V) []forecast {
	keys := make([]forecast, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b forecast) int {
		if a.T != b.T {
			return a.T - b.T
		}
		return a.H - b.H
	})
	return keys
}

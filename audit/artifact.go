package audit

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/audit/table"

	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// FormatVersion is the version of the fitted-audit artifact that Save
// writes and Load reads. The artifact is:
//
//	magic     the 14 bytes "rnnaudit-fit\r\n"
//	version   uint32, little-endian
//	length    uint32, little-endian: the header's length in bytes
//	header    JSON (ArtifactHeader): the model's SHA-256 and path, the
//	          model output, inputs and horizons the fit read the model
//	          with, the parameter pattern, the layout, the training file's
//	          id, time, feature and target columns and shift, the solver,
//	          the representation of the leave-one-block-out models, the
//	          number of blocks and parameters (and the rank)
//	body      a Go gob of the fit (fitBody): the options after defaults,
//	          the description of model and setting, the diagnostics and
//	          warnings of the influence phase, the in-sample residuals by
//	          forecast, the calibration points (forecast, prediction,
//	          target) with their jackknife+ limits, and the
//	          leave-one-block-out models:
//	          representation "steps" (the exact, dual, CG and LiSSA
//	          solvers): per block its step in parameter space (P float64)
//	          and the leave-one-block-out residuals by forecast (block,
//	          sequence, residual);
//	          representation "low-rank" (the LowRank solver): the factor's
//	          k×P orthonormal rows, per block its step's k coordinates in
//	          them and its own leave-out residuals by forecast slot (the
//	          table.BlockTable), the forecast (row, horizon) of each slot, and
//	          per block its mean own prediction shift;
//	          unless the fit was made with Options.Restart, the training
//	          sequences' ids, steps and input rows (fitContext: no
//	          targets), from which Predict continues a new sequence that
//	          follows a training sequence in time (blocks.Continue).
//	          The float64 arrays (steps, residuals, basis, table,
//	          training rows) are left empty in the gob; their lengths
//	          are the body's Lens.
//	raw       the float64 arrays, little-endian, one after another in
//	          the order of fitBody.arrays (artifactraw.go).
//
// A reader that knows the version can read the header without Go; the
// body is for Load. Any change to either is a new version. Versions 1
// (gzip-compressed body, steps only, no output selection), 2 (gob's own
// float encoding) and 3 (no training rows: it restarted every sequence)
// are refused: fit again.
const FormatVersion = 4

// artifactMagic opens every artifact.
const artifactMagic = "rnnaudit-fit\r\n"

// ArtifactHeader is the artifact's readable header: what Load checks
// before it reads the body.
type ArtifactHeader struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	ModelSHA256 string `json:"model_sha256"`
	ModelPath   string `json:"model_path,omitempty"`
	// Output, Inputs and Horizons are Options.Output, Inputs and
	// Horizons of the fit: the model must be loaded with the same output
	// (onnx.LoadOutput with modelio.ParseOutput's name) for its hash and
	// parameters to match.
	Output    string              `json:"output,omitempty"`
	Inputs    map[string][]string `json:"inputs,omitempty"`
	Horizons  int                 `json:"horizons,omitempty"`
	Params    string              `json:"params,omitempty"`
	Layout    string              `json:"layout"`
	TrainFile string              `json:"train_file"`
	IDCol     string              `json:"id_col"`
	TimeCol   string              `json:"time_col"`
	Features  []string            `json:"features"`
	Targets   []string            `json:"targets"`
	Shift     int                 `json:"shift"`
	Solver    string              `json:"solver"`
	// Representation is how the body holds the leave-one-block-out
	// models: "steps" or "low-rank" (see FormatVersion).
	Representation string `json:"representation"`
	Blocks         int    `json:"blocks"`
	Parameters     int    `json:"parameters"`
	// Rank is the number of basis rows of a low-rank fit.
	Rank int `json:"rank,omitempty"`
}

// The representations of ArtifactHeader.
const (
	repSteps   = "steps"
	repLowRank = "low-rank"
)

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
	// follow the gob body raw (artifactraw.go).
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
// section after the gob body (artifactraw.go), so gob sees them empty;
// their gob encoding (raw little-endian bytes, every bit kept) is for
// any left in it.
type f64s []float64

// GobEncode implements gob.GobEncoder.
func (v f64s) GobEncode() ([]byte, error) {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b, nil
}

// GobDecode implements gob.GobDecoder.
func (v *f64s) GobDecode(b []byte) error {
	if len(b)%8 != 0 {
		return fmt.Errorf("%d bytes of float64s", len(b))
	}
	if len(b) == 0 {
		*v = nil
		return nil
	}
	out := make(f64s, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
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
}

// Save writes the fit as an artifact of FormatVersion (see there) for
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
		h.Representation, h.Blocks = repSteps, len(f.inf.delta)
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
		h.Representation, h.Rank, h.Blocks = repLowRank, r.basis.K(), r.table.N
		b.Table = &fitTable{N: r.table.N, K: r.table.K, F: r.table.F, Coef: r.table.Coef, Res: r.table.Res}
		b.Basis, b.Shift = r.basis.U, r.shift
		b.Slots = make([]fitSlot, len(r.slots))
		for fc, i := range r.slots {
			b.Slots[i] = fitSlot{fc.T, fc.H}
		}
	default:
		return fmt.Errorf("audit: save: a fit of the %s solver cannot be saved", f.setting.Solver)
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("audit: save: header: %w", err)
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
	if !f.opt.Restart {
		b.Context = contextOf(f.train)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(artifactMagic)
	binary.Write(bw, binary.LittleEndian, uint32(FormatVersion))
	binary.Write(bw, binary.LittleEndian, uint32(len(hj)))
	bw.Write(hj)
	raw := b.detach()
	if err := gob.NewEncoder(bw).Encode(&b); err != nil {
		return fmt.Errorf("audit: save: %w", err)
	}
	if err := writeRaw(bw, raw); err != nil {
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
		ModelPath: f.opt.ModelPath, Output: f.opt.Output, Inputs: f.opt.Inputs, Horizons: f.opt.Horizons, IDCol: f.train.IDCol, TimeCol: f.train.TimeCol, Params: f.opt.Params, Layout: f.opt.Layout.String(), TrainFile: f.train.File, Features: f.train.Features,
		Targets: f.train.Targets, Shift: f.train.Shift, Solver: f.setting.Solver, Parameters: len(f.theta)}
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
	var b fitBody
	br := bufio.NewReaderSize(r, 1<<16) // an io.ByteReader: gob reads no further than its body
	if err := gob.NewDecoder(br).Decode(&b); err != nil {
		return nil, fmt.Errorf("audit: load: body: %w", err)
	}
	if err := b.attach(br); err != nil {
		return nil, fmt.Errorf("audit: load: %w", err)
	}
	train := &blocks.Dataset{File: h.TrainFile, IDCol: h.IDCol, TimeCol: h.TimeCol, Features: h.Features, Targets: h.Targets, Shift: h.Shift}
	o, g := b.Options, model
	o.Low, o.High = unbound(b.Low), unbound(b.High)
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
	case repSteps:
		if err := f.loadSteps(&h, &b); err != nil {
			return nil, err
		}
	case repLowRank:
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
		cf := &calFit{file: c.File, seqs: c.Seqs, lim: limits{lo: c.Lower, up: c.Upper}}
		for i := range n {
			cf.points = append(cf.points, point{f: forecast{T: c.T[i], H: c.H[i]}, pred: c.Pred[i], y: c.Y[i], has: c.Has[i]})
		}
		f.cal = cf
	}
	if b.Context != nil {
		if train.Seqs, err = b.Context.sequences(len(h.Features)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// loadSteps reads the "steps" representation of b into f.
func (f *Fitted) loadSteps(h *ArtifactHeader, b *fitBody) error {
	if len(b.Delta) != h.Blocks || slices.ContainsFunc(b.Delta, func(d f64s) bool { return len(d) != len(f.theta) }) {
		return fmt.Errorf("audit: load: the artifact has %d blocks of %d parameters, the model %d parameters: the file is damaged", h.Blocks, h.Parameters, len(f.theta))
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
func (f *Fitted) loadTable(h *ArtifactHeader, b *fitBody) error {
	ft, P := b.Table, len(f.theta)
	if ft == nil {
		return errors.New("audit: load: a low-rank artifact without its table: the file is damaged")
	}
	t := &table.BlockTable{N: ft.N, K: ft.K, F: ft.F, Coef: ft.Coef, Res: ft.Res}
	if t.N != h.Blocks || t.K != h.Rank || t.F != len(b.Slots) || len(t.Coef) != t.N*t.K ||
		len(t.Res) != t.N*t.F || len(b.Basis) != t.K*P || len(b.Shift) != t.N {
		return fmt.Errorf("audit: load: the low-rank table does not match %d blocks of rank %d over %d parameters: the file is damaged", h.Blocks, h.Rank, P)
	}
	slots := make(map[forecast]int, len(b.Slots))
	for i, sl := range b.Slots {
		slots[forecast{T: sl.T, H: sl.H}] = i
	}
	f.loo = &looResiduals{shift: b.Shift}
	f.inf.rep = &tableRep{table: t, shift: b.Shift, basis: &table.ShiftBasis{P: P, U: b.Basis}, slots: slots}
	return nil
}

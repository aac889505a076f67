package artifact

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the version of the artifact that package audit's
// Fitted.Save writes and Load reads. The artifact is:
//
//	magic     the 14 bytes "rnnaudit-fit\r\n"
//	version   uint32, little-endian
//	length    uint32, little-endian: the header's length in bytes
//	header    JSON (Header): the model's SHA-256 and path, the
//	          model output, inputs and horizons the fit read the model
//	          with, the parameter pattern, the layout, the training file's
//	          id, time, feature and target columns and shift, the solver,
//	          the representation of the leave-one-block-out models, the
//	          number of blocks and parameters (and the rank)
//	body      a Go gob of the fit (package audit's fitBody): the options
//	          after defaults, the description of model and setting, the
//	          diagnostics and warnings of the influence phase, the
//	          in-sample residuals by forecast, the calibration points
//	          (forecast, prediction, target) with their jackknife+
//	          limits, and the leave-one-block-out models:
//	          representation Steps (the exact, dual, CG and LiSSA
//	          solvers): per block its step in parameter space (P float64)
//	          and the leave-one-block-out residuals by forecast (block,
//	          sequence, residual);
//	          representation LowRank (the LowRank solver): the factor's
//	          k×P orthonormal rows, per block its step's k coordinates in
//	          them and its own leave-out residuals by forecast slot (the
//	          table.BlockTable), the forecast (row, horizon) of each slot, and
//	          per block its mean own prediction shift;
//	          unless the fit was made with Options.Restart, the training
//	          sequences' ids, steps and input rows (no targets), from
//	          which Predict continues a new sequence that follows a
//	          training sequence in time (blocks.Continue).
//	          The float64 arrays (steps, residuals, basis, table,
//	          training rows) are left empty in the gob; their lengths
//	          are in the body.
//	raw       the float64 arrays, little-endian, one after another in
//	          the body's order (Write, BodyReader.ReadRaw).
//
// A reader that knows the version can read the header without Go; the
// body is for package audit's Load. Any change to either is a new
// version. Versions 1 (gzip-compressed body, steps only, no output
// selection), 2 (gob's own float encoding) and 3 (no training rows: it
// restarted every sequence) are refused: fit again.
const Version = 4

// magic opens every artifact.
const magic = "rnnaudit-fit\r\n"

// maxHeader bounds the header's length, so that a damaged length is
// refused before it is allocated.
const maxHeader = 1 << 26

// Header is the artifact's readable header: what Load checks before it
// reads the body, and what a caller reads (ReadHeader) to find the model
// and the columns an artifact needs without reading its body.
type Header struct {
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
	// models: Steps or LowRank (see Version).
	Representation string `json:"representation"`
	Blocks         int    `json:"blocks"`
	Parameters     int    `json:"parameters"`
	// Rank is the number of basis rows of a low-rank fit.
	Rank int `json:"rank,omitempty"`
}

// FormatName is Header.Format of every artifact: it names the kind of
// file for a reader of the JSON alone.
const FormatName = "rnnaudit fitted audit"

// The representations of Header.Representation: how the body holds the
// leave-one-block-out models, which decides what Load rebuilds.
const (
	Steps   = "steps"
	LowRank = "low-rank"
)

// ReadHeader reads an artifact's magic, version and header, refusing
// another format or version.
func ReadHeader(r io.Reader) (Header, error) {
	var h Header
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(r, m); err != nil || string(m) != magic {
		return h, errors.New("not a fitted audit (written by audit fit --save)")
	}
	var version, n uint32
	if err := binary.Read(r, binary.LittleEndian, &version); err != nil {
		return h, fmt.Errorf("truncated header: %w", err)
	}
	if version != Version {
		return h, fmt.Errorf("format version %d, this audit reads version %d: fit again with this version", version, Version)
	}
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return h, fmt.Errorf("truncated header: %w", err)
	}
	if n > maxHeader {
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

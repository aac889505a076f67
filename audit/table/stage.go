package table

import (
	"context"
	"fmt"
	"sync"

	"github.com/rnnaudit/rnnaudit/hvp"
)

// StageKind names one of the three stages an Executor runs.
type StageKind int

const (
	// StageBlocks is the block pass: BlockChunk in, BlockChunkOut out,
	// FactorSpec shared.
	StageBlocks StageKind = iota + 1
	// StagePoints is the test pass: PointChunk in, PointRecords out
	// (EncodePoints), FactorSpec shared.
	StagePoints
	// StageFinalize is the limits: FinalizeChunk in, ChunkLimits out,
	// TableSpec shared.
	StageFinalize
)

// String returns the stage's name as errors and progress print it
// ("blocks", "points", "finalize").
func (k StageKind) String() string {
	switch k {
	case StageBlocks:
		return "blocks"
	case StagePoints:
		return "points"
	case StageFinalize:
		return "finalize"
	}
	return fmt.Sprintf("StageKind(%d)", int(k))
}

// Stage is one pipeline run of an Executor: the encoded inputs of its
// chunks and the encoded value they all read.
type Stage struct {
	// Kind is the stage the chunks belong to.
	Kind StageKind
	// Shared is what every chunk reads (FactorSpec or TableSpec, encoded):
	// megabytes, so an executor sends it once per worker (as a file), not
	// with every chunk.
	Shared []byte
	// Chunks are the chunks' inputs, encoded; their outputs are numbered
	// like them.
	Chunks [][]byte
}

// Executor runs the chunks of a Stage, anywhere and in any order, each
// with a worker's Runner (audit.Worker.Runner: the worker's problem
// built from the same model, data and options as the driver's),
// and gives every output to emit with its chunk's index. emit may be
// called concurrently; an error from emit ends the stage with that
// error. An audit without an executor (audit.Options.Executor nil) runs
// the chunks in process.
type Executor interface {
	Execute(ctx context.Context, s *Stage, emit func(chunk int, out []byte) error) error
}

// Runner runs the chunks of one stage on a worker: a chunk's encoded
// input in, its encoded output out. audit.Worker.Runner makes one per
// stage, with the stage's shared value decoded once; an Executor calls it
// on its workers.
type Runner interface {
	Run(ctx context.Context, chunk []byte) ([]byte, error)
}

// WorkerSpec names what a worker reads to build the audit's problem: the
// same files, read the same way, as the driver. It is plain values
// (JSON), so that it travels in a pipeline; the stages' shared values
// travel apart (Stage.Shared). The audit reads none of it: the command
// that drives an executor fills it and turns it back into
// audit.NewWorker's arguments on the workers.
type WorkerSpec struct {
	// Model, Train, Test and Calibration are the files' URIs (Test
	// empty: a self-audit; Calibration empty: none).
	Model, Train, Test, Calibration string
	// Read are the options that read the data files and Options those of
	// the audit, in the command's own form.
	Read, Options []byte
}

// FactorSpec is what the block and point stages share: the low-rank
// factor's rows U (k×P) and its solve in their coordinates, the loss, the
// forecast slots of the block table ((row, horizon) pairs, in slot
// order) and the block pass's rule (WithRows: per-block Jacobian rows;
// Newton: Newton steps, else infinitesimal ones).
type FactorSpec struct {
	// P is the number of parameters and U the factor's k rows of P
	// floats, row-major; Reduced is its solve in U's coordinates.
	P       int
	U       []float64
	Reduced hvp.Reduced
	// Loss is the training loss the block pass's rule is taken for.
	Loss hvp.Loss
	// Slots are the forecast slots: slot s is the (row, horizon) pair
	// Slots[s].
	Slots [][2]int
	// WithRows asks for per-block Jacobian rows (the leverage) and
	// Newton for Newton steps, else infinitesimal ones.
	WithRows bool
	Newton   bool
	// Problem is the digest of the driver's problem: a worker whose
	// model, data or options differ refuses the stage.
	Problem [32]byte
}

// BlockChunk is one chunk of the block pass: one batch of training
// sequences of equal length, with per sequence its block, the block's
// label and its loss terms at theta_hat.
type BlockChunk struct {
	// Seqs are indices into the training set, in the driver's batch
	// order; Blocks their blocks (-1: none) and Labels the blocks'
	// labels (for errors).
	Seqs, Blocks []int
	Labels       []string
	// Terms are per sequence its loss terms (nil in process, where the
	// driver makes them when the chunk is mapped).
	Terms [][]Term
}

// Term is one loss term of a training sequence, as a BlockChunk carries
// it to a worker.
type Term struct {
	// T and H are the forecast: its row and horizon.
	T, H int
	// Y is the target, FX the output at theta_hat and W the weight.
	Y, FX, W float64
	// Forecast is the index of the forecast among its sequence's.
	Forecast int
}

// BlockChunkOut is a block chunk's output: per sequence of the chunk its
// BlockRecord and figures, and the sum of its gradients.
type BlockChunkOut struct {
	// Recs are the sequences' records; GNorm their gradients' norms
	// |g_b|, Norms their steps' |delta_b| and Shift their mean own
	// prediction shifts.
	Recs                []BlockRecord
	GNorm, Norms, Shift []float64
	// Lev, LevMax and Unbounded are the leverage of the per-block rule
	// (FactorSpec.WithRows; nil otherwise): per sequence its terms'
	// leverages, their largest and whether its step is unbounded.
	Lev       [][]float64
	LevMax    []float64
	Unbounded []bool
	// Total is the sum of the sequences' gradients: any number of
	// vectors of P floats whose exact sum it is (TakeBlockGradient).
	Total []float64
}

// PointChunk is one chunk of the test pass: one batch of sequences of
// equal length of the evaluated set (or of the calibration set, Cal),
// and their points.
type PointChunk struct {
	// Cal is true for sequences of the calibration set.
	Cal bool
	// Seqs are indices into the set, in the driver's batch order.
	Seqs []int
	// Points are the points to map, each naming its sequence by its
	// position in Seqs.
	Points []ChunkPoint
}

// ChunkPoint is one point of a PointChunk.
type ChunkPoint struct {
	// Seq is the sequence's position in the chunk and Forecast the
	// forecast's position among its forecasts.
	Seq, Forecast int
	// F is the prediction, Slot the forecast slot and Skip the block
	// the point leaves out (PointRecord's).
	F          float64
	Slot, Skip int
	// Y is the target, when Labelled.
	Y        float64
	Labelled bool
}

// TableSpec is what the finalize stage shares: the combined block table
// and the levels (Alpha the interval's; Alphas those of the calibration
// curve, empty for calibration points).
type TableSpec struct {
	Alpha  float64
	Alphas []float64
	Table  BlockTable
	// index is the table's limitsIndex, built by the first Finalize.
	index     *limitsIndex
	indexOnce sync.Once
}

// FinalizeChunk is one chunk of the finalize stage: the records of
// consecutive evaluation points.
type FinalizeChunk struct {
	Points []PointRecord
}

// Finalize runs the finalize stage on chunk c: FinalizeLimits with the
// table and levels of t.
func (t *TableSpec) Finalize(c *FinalizeChunk) (ChunkLimits, error) {
	return t.finalize(c.Points)
}

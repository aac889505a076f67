package beamexec

// The pipeline of one stage and its DoFns. A stage is
//
//	Impulse -> listFn (the chunks file: one element per chunk) -> Reshuffle
//	        -> runFn (each chunk on a worker: its output to a file of its own)
//
// and in the block stage runFn also emits each chunk's gradient sum (P
// floats), which a combiner (gradSumFn) adds exactly on the workers
// before the shuffle, so that one accumulator per worker bundle travels
// instead of one vector per chunk (15,625 × 138 KB = 2.15 GB at a million
// sequences of the 64-unit LSTM):
//
//	runFn -> gradSumFn (exact sums: table.GradientSum) -> writeFn (gradient.bin)
//
// The chunks travel as elements (kilobytes each); what they all read
// (the factor, the block table: megabytes) is a file that each worker
// process loads once, never a DoFn field or a side input, which would
// travel inside the pipeline (a 1M-float field costs seconds).

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/table"
)

// chunkElem is one chunk of a stage in the pipeline: its index and its
// encoded input (table.Stage.Chunks). Its coder is raw: the index as 8
// little-endian bytes, then the input's bytes.
type chunkElem struct {
	Index int
	Data  []byte
}

func encodeChunkElem(e chunkElem) []byte {
	return append(binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(e.Data)), uint64(e.Index)), e.Data...)
}

func decodeChunkElem(b []byte) (chunkElem, error) {
	if len(b) < 8 {
		return chunkElem{}, fmt.Errorf("beamexec: a chunk element of %d bytes", len(b))
	}
	return chunkElem{Index: int(binary.LittleEndian.Uint64(b)), Data: b[8:]}, nil
}

// chunksDone counts the chunks run, for the driver's progress (the job's
// metrics).
var chunksDone = beam.NewCounter(metricNamespace, metricChunks)

const (
	metricNamespace = "rnnaudit"
	metricChunks    = "chunks"
)

func init() {
	beam.RegisterCoder(reflect.TypeOf(chunkElem{}), encodeChunkElem, decodeChunkElem)
	register.DoFn3x1[context.Context, []byte, func(chunkElem), error](&listFn{})
	register.Emitter1[chunkElem]()
	register.DoFn3x1[context.Context, chunkElem, func([]byte), error](&runFn{})
	register.Emitter1[[]byte]()
	register.Combiner1[[]byte](&gradSumFn{})
	register.DoFn2x1[context.Context, []byte, error](&writeFn{})
}

// listFn reads the chunks file (writeChunks) and emits every chunk, in
// order or reversed.
type listFn struct {
	Chunks  string
	Reverse bool
}

func (f *listFn) ProcessElement(ctx context.Context, _ []byte, emit func(chunkElem)) error {
	b, err := readURI(ctx, f.Chunks)
	if err != nil {
		return err
	}
	chunks, err := splitChunks(b)
	if err != nil {
		return fmt.Errorf("beamexec: %s: %w", f.Chunks, err)
	}
	for i := range chunks {
		c := i
		if f.Reverse {
			c = len(chunks) - 1 - i
		}
		emit(chunkElem{Index: c, Data: chunks[c]})
	}
	return nil
}

// runFn runs one chunk of a stage on a worker and writes its output to
// Out/<index>.bin: first under a temporary name, then renamed, so that
// a file of that name is always a whole output (a retried bundle writes
// the same bytes again).
type runFn struct {
	// Spec is the table.WorkerSpec, JSON.
	Spec   []byte
	Kind   int
	Shared string
	Out    string
}

// In the block stage it emits the chunk's gradient sum (an encoded
// table.GradientSum) apart from the output, which keeps none.
func (f *runFn) ProcessElement(ctx context.Context, e chunkElem, grad func([]byte)) error {
	kind := table.StageKind(f.Kind)
	r, err := runners.get(ctx, f.Spec, kind, f.Shared)
	if err != nil {
		return err
	}
	out, err := r.Run(ctx, e.Data)
	if err != nil {
		return fmt.Errorf("beamexec: %s stage, chunk %d: %w", kind, e.Index, err)
	}
	var sum []byte
	if kind == table.StageBlocks {
		var g []float64
		if out, g, err = table.TakeBlockGradient(out); err != nil {
			return fmt.Errorf("beamexec: %s stage, chunk %d: %w", kind, e.Index, err)
		}
		if sum, err = gradientSum(g); err != nil {
			return fmt.Errorf("beamexec: %s stage, chunk %d: %w", kind, e.Index, err)
		}
	}
	if err := writeRenamed(ctx, outName(f.Out, e.Index), out); err != nil {
		return err
	}
	if sum != nil {
		grad(sum)
	}
	chunksDone.Inc(ctx, 1)
	return nil
}

// gradientSum is the encoded table.GradientSum of the vectors g (one
// vector here: a chunk's gradient sum).
func gradientSum(g []float64) ([]byte, error) {
	s := table.NewGradientSum(len(g))
	if err := s.Add(g); err != nil {
		return nil, err
	}
	return s.MarshalBinary()
}

// gradSumFn adds the block chunks' gradient sums exactly (audit.
// GradientSum, encoded: its raw coder is the identity on bytes). The sum
// is the same bits in whatever order the runner adds inputs and merges
// accumulators, so the stage's total gradient equals the in-process
// fold's.
type gradSumFn struct{}

func (gradSumFn) CreateAccumulator() []byte { return nil }

func (f gradSumFn) AddInput(acc, in []byte) ([]byte, error) { return f.MergeAccumulators(acc, in) }

func (gradSumFn) MergeAccumulators(a, b []byte) ([]byte, error) {
	if len(a) == 0 {
		return b, nil
	}
	if len(b) == 0 {
		return a, nil
	}
	sa, sb := &table.GradientSum{}, &table.GradientSum{}
	if err := sa.UnmarshalBinary(a); err != nil {
		return nil, err
	}
	if err := sb.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if err := sa.Merge(sb); err != nil {
		return nil, err
	}
	return sa.MarshalBinary()
}

func (gradSumFn) ExtractOutput(acc []byte) []byte { return acc }

// writeFn writes its one element to the file Name (writeRenamed).
type writeFn struct{ Name string }

func (f *writeFn) ProcessElement(ctx context.Context, b []byte) error {
	return writeRenamed(ctx, f.Name, b)
}

// outName is the output file of chunk c.
func outName(dir string, c int) string { return fmt.Sprintf("%s/%07d.bin", dir, c) }

// writeRenamed writes data to name through a temporary name.
func writeRenamed(ctx context.Context, name string, data []byte) error {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	var r [6]byte
	rand.Read(r[:])
	tmp := name + ".tmp-" + hex.EncodeToString(r[:])
	if err := filesystem.Write(ctx, fs, tmp, data); err != nil {
		return fmt.Errorf("beamexec: writing %s: %w", tmp, err)
	}
	if err := filesystem.Rename(ctx, fs, tmp, name); err != nil {
		return fmt.Errorf("beamexec: renaming %s to %s: %w", tmp, name, err)
	}
	return nil
}

// readURI reads a whole file through the Beam filesystem of its scheme
// (none: local; gs, s3, memfs).
func readURI(ctx context.Context, uri string) ([]byte, error) {
	fs, err := filesystem.New(ctx, uri)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	b, err := filesystem.Read(ctx, fs, uri)
	if err != nil {
		return nil, fmt.Errorf("beamexec: reading %s: %w", uri, err)
	}
	return b, nil
}

// joinChunks encodes a stage's chunks as one file: per chunk its length
// (8 bytes, little-endian), then its bytes.
func joinChunks(chunks [][]byte) []byte {
	n := 0
	for _, c := range chunks {
		n += 8 + len(c)
	}
	out := make([]byte, 0, n)
	for _, c := range chunks {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(c)))
		out = append(out, c...)
	}
	return out
}

// splitChunks decodes what joinChunks encoded.
func splitChunks(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, fmt.Errorf("a chunks file ends within a length")
		}
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if n > uint64(len(b)) {
			return nil, fmt.Errorf("a chunk of %d bytes, %d left", n, len(b))
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out, nil
}

// runnerCache holds, per worker process, the audit.Worker of each spec
// (its model and data read once) and the runner of each stage (its
// shared file read once).
type runnerCache struct {
	mu      sync.Mutex
	workers map[string]*workerEntry
	runners map[string]*runnerEntry
}

type workerEntry struct {
	once sync.Once
	w    *audit.Worker
	err  error
}

type runnerEntry struct {
	once sync.Once
	r    table.Runner
	err  error
}

var runners = &runnerCache{workers: map[string]*workerEntry{}, runners: map[string]*runnerEntry{}}

// get returns the runner of a stage of kind whose shared value is in
// the file shared, for the audit that spec describes.
func (c *runnerCache) get(ctx context.Context, spec []byte, kind table.StageKind, shared string) (table.Runner, error) {
	key := fmt.Sprintf("%d\x00%s\x00%s", kind, shared, spec)
	c.mu.Lock()
	re, ok := c.runners[key]
	if !ok {
		re = &runnerEntry{}
		c.runners[key] = re
	}
	c.mu.Unlock()
	re.once.Do(func() {
		var w *audit.Worker
		if kind != table.StageFinalize {
			if w, re.err = c.worker(ctx, spec); re.err != nil {
				return
			}
		}
		b, err := readURI(ctx, shared)
		if err != nil {
			re.err = err
			return
		}
		re.r, re.err = w.Runner(kind, b)
	})
	return re.r, re.err
}

// worker returns the audit.Worker of spec, built once per process.
func (c *runnerCache) worker(ctx context.Context, spec []byte) (*audit.Worker, error) {
	c.mu.Lock()
	we, ok := c.workers[string(spec)]
	if !ok {
		we = &workerEntry{}
		c.workers[string(spec)] = we
	}
	c.mu.Unlock()
	we.once.Do(func() {
		var s table.WorkerSpec
		if err := json.Unmarshal(spec, &s); err != nil {
			we.err = fmt.Errorf("beamexec: the worker spec: %w", err)
			return
		}
		we.w, we.err = LoadWorker(ctx, &s)
	})
	return we.w, we.err
}

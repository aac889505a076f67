package artifact

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Version is the version of the artifact that package audit's
// Fitted.Save writes; Load reads it and version 5. The artifact is:
//
//	magic     the 14 bytes "rnnaudit-fit\r\n"
//	version   uint32, little-endian
//	lengths   uint32 header length, uint64 body length, uint64 raw
//	          length in bytes, little-endian: the file is exactly
//	          50 + their sum bytes long
//	digests   three uint32 CRC-32C (Castagnoli), little-endian, one a
//	          section: the header section's (the 38 bytes of magic,
//	          version and lengths, then the header), the body's and the
//	          raw section's, each checked when its section is read (the
//	          header's always, by ReadHeader too), before it is decoded
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
//	          are in the body and add up to the raw length.
//	raw       the float64 arrays, little-endian, one after another in
//	          the body's order (Write, Contents.Arrays).
//
// Version 5 is the same but for the digests: one 32-byte SHA-256 of
// every other byte of the file in their place (a preamble of 70 bytes),
// which costs a pass of SHA-256 over the whole file on every load (a
// fifth of the CPU of a one-sequence predict on the paper-scale example); Read
// still reads it. A reader that knows the version can read the header
// without Go; the body is for package audit's Load. Any change to either
// is a new version. Versions 1 (gzip-compressed body, steps only, no
// output selection), 2 (gob's own float encoding), 3 (no training rows:
// it restarted every sequence) and 4 (no lengths and no checksum: a
// damaged file loaded) are refused: fit again.
const Version = 6

// version5 is the previous version, which Read still reads.
const version5 = 5

// magic opens every artifact.
const magic = "rnnaudit-fit\r\n"

// maxHeader bounds the header's length, so that a damaged length is
// refused before it is allocated.
const maxHeader = 1 << 26

// MaxSize is the largest artifact Read reads: 16 GiB, four times the
// low-rank fit of a 10-million-parameter model with 100 blocks of rank
// 500 (design.md, section 4.9), and more than any fit this version can
// hold in memory. Every length in the file is checked against it, and
// against the bytes the file holds when their number is known, before
// anything is allocated.
const MaxSize = 16 << 30

// lengthsEnd is the length of the magic, the version and the three
// lengths, which every version from 5 on opens with.
const lengthsEnd = len(magic) + 4 + 4 + 8 + 8

// preambleLen is the length of what precedes the header in Version:
// magic, version, the three lengths and the three CRC-32C; preambleLen5
// in version 5, whose SHA-256 takes the CRCs' place.
const (
	preambleLen  = lengthsEnd + 3*4
	preambleLen5 = lengthsEnd + sha256.Size
)

// The sections of a Version artifact, each with its CRC-32C, in the
// order of the file and of preamble.crc.
const (
	secHeader = iota
	secBody
	secRaw
)

// sectionNames name the sections in messages.
var sectionNames = [...]string{"header", "body", "float arrays"}

// castagnoli is the CRC-32C table (hash/crc32 computes the CRC with the
// processor's CRC32 instruction where there is one: about 20 GB/s,
// against 1.3 GB/s for SHA-256 with SHA extensions). hash/crc32 makes
// it once, on the first call, so that a command that reads no artifact
// does not pay for it at start.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

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

// preamble is what precedes the header.
type preamble struct {
	version   int               // Version or version5
	header    int               // the header's length in bytes
	body, raw int64             // the gob body's and the raw section's
	sum       [sha256.Size]byte // version 5's SHA-256
	crc       [3]uint32         // Version's CRC-32C by section
	bytes     []byte            // the magic, version and lengths as read
}

// len is the length of p in the file.
func (p *preamble) len() int {
	if p.version == version5 {
		return preambleLen5
	}
	return preambleLen
}

// readPreamble reads an artifact's magic, version, lengths and digests,
// refusing another format or version and lengths beyond MaxSize or
// other than the size of the file when it is known (size >= 0: the
// bytes r holds from its start).
func readPreamble(r io.Reader, size int64) (*preamble, error) {
	b := make([]byte, preambleLen5)
	if n, err := io.ReadFull(r, b[:len(magic)]); err != nil || string(b[:n]) != magic {
		return nil, errors.New("not a fitted audit (written by audit fit --save)")
	}
	if _, err := io.ReadFull(r, b[len(magic):len(magic)+4]); err != nil {
		return nil, fmt.Errorf("truncated header: %w", err)
	}
	p := &preamble{version: int(binary.LittleEndian.Uint32(b[len(magic):]))}
	if p.version != Version && p.version != version5 {
		return nil, fmt.Errorf("format version %d, this audit reads versions %d and %d: fit again with this version", p.version, version5, Version)
	}
	if _, err := io.ReadFull(r, b[len(magic)+4:p.len()]); err != nil {
		return nil, fmt.Errorf("truncated header: %w", err)
	}
	p.bytes = b[:lengthsEnd]
	n := binary.LittleEndian.Uint32(b[len(magic)+4:])
	body := binary.LittleEndian.Uint64(b[len(magic)+8:])
	raw := binary.LittleEndian.Uint64(b[len(magic)+16:])
	if p.version == version5 {
		copy(p.sum[:], b[lengthsEnd:])
	} else {
		for i := range p.crc {
			p.crc[i] = binary.LittleEndian.Uint32(b[lengthsEnd+4*i:])
		}
	}
	switch {
	case n > maxHeader:
		return nil, fmt.Errorf("header of %d bytes: the file is damaged", n)
	case body > MaxSize || raw > MaxSize:
		return nil, fmt.Errorf("a body of %d bytes and %d bytes of arrays, more than an artifact holds (%d GiB): the file is damaged", body, raw, MaxSize>>30)
	case raw%8 != 0:
		return nil, fmt.Errorf("%d bytes of float64 arrays, not a multiple of 8: the file is damaged", raw)
	}
	p.header, p.body, p.raw = int(n), int64(body), int64(raw)
	if want := int64(p.len()) + int64(n) + p.body + p.raw; size >= 0 && size != want {
		return nil, fmt.Errorf("the file is %d bytes, its lengths say %d: the file is truncated or damaged", size, want)
	}
	return p, nil
}

// check compares the CRC-32C got of section sec with the one p records.
func (p *preamble) check(sec int, got uint32) error {
	if got != p.crc[sec] {
		return fmt.Errorf("its %s section has CRC-32C %08x, it records %08x: the file is damaged (changed after audit fit --save wrote it); copy it again or fit again",
			sectionNames[sec], got, p.crc[sec])
	}
	return nil
}

// readHeaderSection reads the header after p from r (known: its length
// was checked against the bytes r holds) and, in a Version artifact,
// checks the header section's CRC-32C.
func readHeaderSection(r io.Reader, p *preamble, known bool) ([]byte, error) {
	hj, err := readN(r, int64(p.header), known)
	if err != nil {
		return nil, fmt.Errorf("truncated header: %w", err)
	}
	if p.version != version5 {
		if err := p.check(secHeader, crc32.Update(crc32.Checksum(p.bytes, castagnoli()), castagnoli(), hj)); err != nil {
			return nil, err
		}
	}
	return hj, nil
}

// ReadHeader reads an artifact's preamble and header, refusing another
// format or version, and lengths that disagree with the file's size
// when r tells it (an *os.File of a regular file, a bytes.Reader); in a
// Version artifact it checks the header section's CRC-32C. It reads
// nothing after the header: Read checks the other sections (and a
// version 5 artifact's SHA-256, which covers the whole file).
func ReadHeader(r io.Reader) (Header, error) {
	var h Header
	size := sizeOf(r)
	p, err := readPreamble(r, size)
	if err != nil {
		return h, err
	}
	hj, err := readHeaderSection(r, p, size >= 0)
	if err != nil {
		return h, err
	}
	return h, parseHeader(hj, &h)
}

// parseHeader decodes the header's JSON into h.
func parseHeader(hj []byte, h *Header) error {
	if err := json.Unmarshal(hj, h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	return nil
}

package artifact

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
)

// writeV5 is Write of version 5 (as the audit of that version wrote
// it): the preamble with the SHA-256 of every other byte in place of the
// CRC-32Cs. Tests write with it the artifacts of version 5 that Read
// must still read.
func writeV5(w io.Writer, h Header, body any, arrays [][]float64) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(body); err != nil {
		return err
	}
	raw := int64(0)
	for _, a := range arrays {
		raw += 8 * int64(len(a))
	}
	if len(hj) > maxHeader || int64(gb.Len()) > MaxSize || raw > MaxSize {
		return fmt.Errorf("a header of %d bytes, a body of %d and %d bytes of arrays: more than an artifact holds (%d GiB)", len(hj), gb.Len(), raw, MaxSize>>30)
	}
	pre := make([]byte, 0, preambleLen5)
	pre = append(pre, magic...)
	pre = binary.LittleEndian.AppendUint32(pre, version5)
	pre = binary.LittleEndian.AppendUint32(pre, uint32(len(hj)))
	pre = binary.LittleEndian.AppendUint64(pre, uint64(gb.Len()))
	pre = binary.LittleEndian.AppendUint64(pre, uint64(raw))
	sum := sha256.New()
	sum.Write(pre)
	sum.Write(hj)
	sum.Write(gb.Bytes())
	if err := writeRaw(sum, arrays); err != nil {
		return err
	}
	pre = sum.Sum(pre)
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(pre)
	bw.Write(hj)
	bw.Write(gb.Bytes())
	if err := writeRaw(bw, arrays); err != nil {
		return err
	}
	return bw.Flush()
}

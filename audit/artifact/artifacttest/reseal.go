// Package artifacttest holds what tests of several packages do to
// artifacts (package audit/artifact's format): Reseal, which writes over
// an edited artifact the digests of its bytes, as a forger would, so
// that a test reaches the checks after the digests.
package artifacttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
)

// lengthsEnd is where the digests begin: after the 14-byte magic, the
// version and the three lengths.
const lengthsEnd = 14 + 4 + 4 + 8 + 8

// Reseal returns a copy of b with its digests computed again from its
// other bytes: in version 6, the CRC-32C of the header section (the
// first 38 bytes and the header), of the body and of the raw section,
// framed by the lengths b records (clipped to b); in version 5, the
// SHA-256 of every other byte. Bytes of another version, or too short
// to hold the digests, are returned as they are.
func Reseal(b []byte) []byte {
	if len(b) < lengthsEnd {
		return b
	}
	switch binary.LittleEndian.Uint32(b[14:]) {
	case 5:
		if len(b) < lengthsEnd+sha256.Size {
			return b
		}
		b = bytes.Clone(b)
		h := sha256.New()
		h.Write(b[:lengthsEnd])
		h.Write(b[lengthsEnd+sha256.Size:])
		copy(b[lengthsEnd:], h.Sum(nil))
	case 6:
		const pre = lengthsEnd + 12
		if len(b) < pre {
			return b
		}
		b = bytes.Clone(b)
		clip := func(off, n uint64) uint64 { return min(off+min(n, uint64(len(b))), uint64(len(b))) }
		hEnd := clip(pre, uint64(binary.LittleEndian.Uint32(b[18:])))
		bEnd := clip(hEnd, binary.LittleEndian.Uint64(b[22:]))
		t := crc32.MakeTable(crc32.Castagnoli)
		binary.LittleEndian.PutUint32(b[lengthsEnd:], crc32.Update(crc32.Checksum(b[:lengthsEnd], t), t, b[pre:hEnd]))
		binary.LittleEndian.PutUint32(b[lengthsEnd+4:], crc32.Checksum(b[hEnd:bEnd], t))
		binary.LittleEndian.PutUint32(b[lengthsEnd+8:], crc32.Checksum(b[bEnd:], t))
	}
	return b
}

package onnx

// maxNesting bounds how deeply the messages of the copy of the model given
// to onnx-go may nest. onnx-go's protobuf runtime decodes nested messages
// by recursion without a limit, so a file that nests a type or an
// attribute a million levels deep (a few megabytes) would exhaust the
// goroutine stack, a crash no recover can catch. Real models nest about
// ten levels (model, graph, node, attribute, tensor; value info, type,
// shape, dimension).
const maxNesting = 100

// tooDeep reports whether the message b holds messages nested more than
// left levels below it. Any length-delimited field that parses as a
// message counts as one, so strings may count too; this only over-counts,
// and real nesting stays far below maxNesting. The cost is at most
// maxNesting passes over b; the wire reader has already left out of the
// copy for onnx-go the parts that nest in real files (graph attributes,
// sequence and map types).
func tooDeep(b []byte, left int) bool {
	for f, err := range fields(b, 0) {
		if err != nil {
			return false
		}
		if f.wire != wireBytes || len(f.data) == 0 {
			continue
		}
		if left == 0 {
			if isMessage(f.data) {
				return true
			}
			continue
		}
		if tooDeep(f.data, left-1) {
			return true
		}
	}
	return false
}

// isMessage reports whether b parses whole as protobuf fields.
func isMessage(b []byte) bool {
	for off := 0; off < len(b); {
		_, n, err := readField(b[off:], 0)
		if err != nil {
			return false
		}
		off += n
	}
	return true
}

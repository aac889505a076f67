// Package onnx decodes ONNX model files into a graph.Graph.
//
// Decode and Load read a serialized ModelProto; ReadTensor reads a
// serialized TensorProto (the test-data files of the ONNX backend tests);
// DetectLayout tells whether a decoded model reads [batch, time, features]
// or [time, batch, features].
//
// # Two readers, one job each
//
// The project decodes through github.com/owulveryck/onnx-go (v0.5.0), and
// nothing outside this package imports it. onnx-go has defects that a
// faithful decoder must avoid, so the file is read twice, and each part of
// the model is taken from exactly one of the two readers:
//
//   - onnx-go (backend.go) gives the list of nodes in file order, each
//     with its operator type, its input and output names and its float,
//     int, string, floats, ints and strings attributes. The Backend is a
//     recorder, not a gonum graph: it logs every edge onnx-go adds (a gonum
//     simple graph keeps one edge per pair of nodes, which would lose the
//     second input of Mul(x, x)), and the edges added before each
//     ApplyOperation are that node's inputs, ordered by their weight.
//     onnx-go maps every absent optional value ("") to one shared node; we
//     read its name back as "", so absent values stay absent and never join
//     unrelated nodes. The input onnx-go makes up for a node with none
//     ("<node name>/input", for Constant) is dropped.
//
//   - A small protobuf wire reader (wire.go, proto.go, tensor.go) reads
//     what onnx-go drops or gets wrong: the IR version and the opset
//     imports; the element types and dimensions of the graph inputs and
//     outputs, symbolic names included (onnx-go keeps only fixed sizes and
//     rejects float16); every TensorProto, both initializers and tensor
//     attributes such as Constant's value (onnx-go reads raw booleans as
//     8 bytes, rejects most types, does not check the number of values
//     and can panic); the name and domain of each node, which onnx-go does
//     not pass on; and the kind of each attribute.
//
// The wire reader also writes the copy of the model that onnx-go is given:
// the same bytes without the initializers and value infos (which we do not
// take from onnx-go) and without the attributes onnx-go cannot represent
// (tensors, which it may fail on, and graphs, which it rejects), and a
// float16 model decodes. The bodies of Loop, Scan and If (graph
// attributes) are decoded by the wire reader alone, nodes and attributes
// of every kind, into graph.Subgraph values (subgraph.go). The wire reader does read each node's operator type and name
// lists too, only to check them: where the two readers disagree on a node
// (possible only for strangely encoded files), Decode reports the file as
// invalid.
//
// # Errors
//
// Any bytes give a graph or an error, never a panic: Decode recovers a
// panic from onnx-go or the graph package and returns it as an error. The
// errors wrap ErrInvalid (malformed or inconsistent bytes: "onnx: not a
// valid ONNX model: ..."), ErrUnsupported (string or complex tensors,
// sequence inputs, untyped attributes) or ErrExternalData; problems in
// several tensors or nodes come together as a graph.ErrorList. Problems
// with the graph itself (unsupported operators, values that no node
// produces) are reported by graph.New, each as a *graph.NodeError, all of
// them in one run.
package onnx

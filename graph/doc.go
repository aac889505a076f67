// Package graph is rnnaudit's own differentiable evaluator of ONNX models:
// float64 tensors, the operators recurrent-model exports use, and exact
// first and second derivatives with respect to the model's parameters.
//
// # Graph and parameters
//
// A Graph is a decoded model (package onnx builds it): declared inputs and
// outputs, nodes in topological order and initializers. Every
// floating-point initializer that an output depends on is a parameter; the
// parameters form one flat float64 vector theta in file order, described by
// Params (name, shape, offset). Restrict keeps only the parameters matching
// a name pattern (ParamPattern), turning the others into constants.
//
// # Programs
//
// Compile specialises a Graph to concrete input shapes (and values of
// integer inputs such as sequence lengths). Every integer and shape
// computation (Shape, Gather of shapes, Concat, ConstantOfShape, TopK of
// lengths, ...) is folded at compile time, and every node, RNN, LSTM and
// GRU unrolled over time included, and Loop, Scan and If unrolled when
// their trip count or condition folds (controlflow.go), is lowered to a
// straight-line list of primitive kernels over numbered slots: six for the
// recurrent core (data movement through index maps, concatenation,
// broadcasting arithmetic, elementwise functions, matrix products and
// softmax) and five more for the operator families around it: reductions,
// binary functions (Pow, PRelu, Max, Min), comparisons, selection (Where)
// and index maps with padding. Most operators are compositions of these:
// Conv is an index map and a matrix product, LayerNormalization reductions
// and arithmetic. The operator table (optable.go) lists every operator with
// its family and its lowering. A Program is read-only and shared; a State
// holds one evaluation's buffers, so repeated runs allocate nothing.
//
// # Derivatives
//
// Each kernel has three derivative rules (kernels_diff.go; the elementwise
// functions' in activations.go, beside each activation's derivatives): the tangent
// (J v), the vector-Jacobian product (J^T g) and the tangent of the latter
// along v, which gives exact Hessian-vector products by forward-over-reverse
// differentiation. State exposes them as Forward, Tangent, Backward and
// SecondOrder (and ForwardTangent, BackwardTangent); package hvp builds the
// loss, its gradient, Hessian- and Gauss-Newton-vector products on them.
// Parameter cotangents accumulate directly into the caller's gradient
// vector.
//
// A program compiled for a batch of examples (sequences) gives every
// example's own gradient from one backward pass: Program.PerExample finds
// which example each value belongs to and where parameter-only values meet
// the data, and State.BackwardPerExample splits the parameter cotangents by
// example there (perexample.go).
//
// # Numerics and speed
//
// All values are float64 whatever the file stores (float16 and float32
// weights are widened exactly). Matrix products, tanh and tanh's
// derivative loops run on the kernels of internal/asm/f64: AVX-512 or
// AVX2/FMA assembly when the processor has them, gonum's BLAS and Go loops
// otherwise or under the purego build tag;
// large elementwise kernels split their work across cores unless the State
// is serial (SetSerial), which callers that already run States in parallel
// set.
//
// # Errors
//
// Model problems found without input shapes (unsupported operators, unknown
// inputs, cycles, also inside subgraphs) are reported by New as an ErrorList naming
// every node; problems that need shapes are *NodeError values from Compile.
// Sentinels (ErrUnsupportedOp, ErrAttr, ErrShape, ErrInput,
// ErrNotDifferentiable, ErrNotSeparable) work with errors.Is.
package graph

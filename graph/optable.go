package graph

import (
	"maps"
	"slices"
)

// The operator table: every operator type of the default ONNX domain that
// the graph implements, with what it is and how it is lowered. Adding an
// operator is one entry here (and its lowering in the file its family
// names); SupportedOps, the checks of New and the compiler read this table.

// An opFamily says what kind of operator an entry is, which is also the
// file that lowers it.
type opFamily uint8

const (
	// famCore are the operators recurrent-model exports are made of
	// (ops.go): constants and shapes, casts, arithmetic, the activations
	// of activations.go, softmax, matrix products and reshaping.
	famCore opFamily = iota
	// famStatic are evaluated only at compile time, on lengths and shapes
	// (static.go).
	famStatic
	// famRecurrent are the recurrent layers, unrolled over time (rnn.go).
	famRecurrent
	// famElementwise are the further elementwise functions, binary
	// functions, comparisons and selection (elementwise.go).
	famElementwise
	// famReduce are the reductions (reduce.go).
	famReduce
	// famNorm are the normalisations (norm.go).
	famNorm
	// famConv are convolution, pooling and padding (conv.go).
	famConv
	// famTensor are the tensor operators lowered onto existing kernels
	// (tensorops.go).
	famTensor
	// famControlFlow are Loop, Scan, If and the sequence operators,
	// unrolled at compile time (controlflow.go).
	famControlFlow
)

// An opSpec is one entry of the operator table.
type opSpec struct {
	family opFamily
	// lower turns a node of the operator into builder calls.
	lower lowerFunc
	// seqs says the operator accepts sequence values as inputs (the
	// compiler rejects them elsewhere).
	seqs bool
}

// operators is the operator table, keyed by operator type. It is filled
// by init rather than by its declaration because the control-flow
// lowerings compile their bodies through it (an initialization cycle for
// a declaration); nothing changes it afterwards.
var operators map[string]opSpec

func init() {
	core := func(f lowerFunc) opSpec { return opSpec{family: famCore, lower: f} }
	static := func(f lowerFunc) opSpec { return opSpec{family: famStatic, lower: f} }
	recurrent := func(f lowerFunc) opSpec { return opSpec{family: famRecurrent, lower: f} }
	elementwise := func(f lowerFunc) opSpec { return opSpec{family: famElementwise, lower: f} }
	reduce := func(f lowerFunc) opSpec { return opSpec{family: famReduce, lower: f} }
	norm := func(f lowerFunc) opSpec { return opSpec{family: famNorm, lower: f} }
	conv := func(f lowerFunc) opSpec { return opSpec{family: famConv, lower: f} }
	tensor := func(f lowerFunc) opSpec { return opSpec{family: famTensor, lower: f} }
	control := func(f lowerFunc, seqs bool) opSpec { return opSpec{family: famControlFlow, lower: f, seqs: seqs} }
	absolute := func(c *compiler, x *value) *value { return c.unary(actAbs, x) }
	then := func(a *activation) func(c *compiler, _, r *value, _ []bool) *value {
		return func(c *compiler, _, r *value, _ []bool) *value { return c.unary(a, r) }
	}

	operators = map[string]opSpec{
		"Identity":        {family: famCore, lower: lowerIdentity, seqs: true},
		"Dropout":         core(lowerDropout),
		"Constant":        core(lowerConstant),
		"ConstantOfShape": core(lowerConstantOfShape),
		"Shape":           core(lowerShape),
		"Cast":            core(lowerCast),
		"Add":             core(lowerBinary(opAdd)),
		"Sub":             core(lowerBinary(opSub)),
		"Mul":             core(lowerBinary(opMul)),
		"Div":             core(lowerBinary(opDiv)),
		"Neg":             core(lowerUnary(actNeg)),
		"Tanh":            core(lowerUnary(actTanh)),
		"Sigmoid":         core(lowerUnary(actSigmoid)),
		"Relu":            core(lowerUnary(actRelu)),
		"Exp":             core(lowerUnary(actExp)),
		"Log":             core(lowerUnary(actLog)),
		"LeakyRelu":       core(lowerLeakyRelu),
		"Softmax":         core(lowerSoftmax(false)),
		"LogSoftmax":      core(lowerSoftmax(true)),
		"MatMul":          core(lowerMatMul),
		"Gemm":            core(lowerGemm),
		"Transpose":       core(lowerTranspose),
		"Squeeze":         core(lowerSqueeze),
		"Unsqueeze":       core(lowerUnsqueeze),
		"Reshape":         core(lowerReshape),
		"Flatten":         core(lowerFlatten),
		"Concat":          core(lowerConcat),
		"Split":           core(lowerSplit),
		"Slice":           core(lowerSlice),
		"Gather":          core(lowerGather),
		"Expand":          core(lowerExpand),

		"TopK":            static(lowerTopK),
		"ReduceProd":      static(lowerReduceProd),
		"Range":           static(lowerRange),
		"ScatterElements": static(lowerScatterElements),

		"RNN":  recurrent(lowerRNN),
		"LSTM": recurrent(lowerLSTM),
		"GRU":  recurrent(lowerGRU),

		"Abs":            elementwise(lowerUnary(actAbs)),
		"Sqrt":           elementwise(lowerUnary(actSqrt)),
		"Erf":            elementwise(lowerUnary(actErf)),
		"Sin":            elementwise(lowerUnary(actSin)),
		"Cos":            elementwise(lowerUnary(actCos)),
		"Reciprocal":     elementwise(lowerUnary(actReciprocal)),
		"Sign":           elementwise(lowerUnary(actSign)),
		"Softplus":       elementwise(lowerUnary(actSoftplus)),
		"Softsign":       elementwise(lowerUnary(actSoftsign)),
		"Mish":           elementwise(lowerUnary(actMish)),
		"HardSwish":      elementwise(lowerUnary(actHardSwish)),
		"Elu":            elementwise(lowerElu),
		"Selu":           elementwise(lowerSelu),
		"Celu":           elementwise(lowerCelu),
		"HardSigmoid":    elementwise(lowerHardSigmoid),
		"Gelu":           elementwise(lowerGelu),
		"Clip":           elementwise(lowerClip),
		"Pow":            elementwise(lowerPow),
		"PRelu":          elementwise(lowerPRelu),
		"Max":            elementwise(lowerVariadic(fnMax)),
		"Min":            elementwise(lowerVariadic(fnMin)),
		"Sum":            elementwise(lowerSum(false)),
		"Mean":           elementwise(lowerSum(true)),
		"Where":          elementwise(lowerWhere),
		"Equal":          elementwise(lowerCompare(cmpEq)),
		"Greater":        elementwise(lowerCompare(cmpGt)),
		"GreaterOrEqual": elementwise(lowerCompare(cmpGe)),
		"Less":           elementwise(lowerCompare(cmpLt)),
		"LessOrEqual":    elementwise(lowerCompare(cmpLe)),
		"Not":            elementwise(lowerNot),

		"ReduceSum":       reduce(lowerReduce(reduceSum, 13, nil, nil)),
		"ReduceMean":      reduce(lowerReduce(reduceSum, 18, nil, lowerReduceMean)),
		"ReduceMax":       reduce(lowerReduce(reduceMax, 18, nil, nil)),
		"ReduceMin":       reduce(lowerReduce(reduceMin, 18, nil, nil)),
		"ReduceSumSquare": reduce(lowerReduce(reduceSum, 18, square, nil)),
		"ReduceL1":        reduce(lowerReduce(reduceSum, 18, absolute, nil)),
		"ReduceL2":        reduce(lowerReduce(reduceSum, 18, square, then(actSqrt))),
		"ReduceLogSum":    reduce(lowerReduce(reduceSum, 18, nil, then(actLog))),
		"ReduceLogSumExp": reduce(lowerReduceLogSumExp),

		"LayerNormalization":    norm(lowerLayerNorm),
		"BatchNormalization":    norm(lowerBatchNorm),
		"InstanceNormalization": norm(lowerInstanceNorm),

		"Conv":              conv(lowerConv),
		"AveragePool":       conv(lowerPool(false)),
		"MaxPool":           conv(lowerPool(true)),
		"GlobalAveragePool": conv(lowerGlobalPool(false)),
		"GlobalMaxPool":     conv(lowerGlobalPool(true)),
		"Pad":               conv(lowerPad),
		"Tile":              conv(lowerTile),

		"CumSum":         tensor(lowerCumSum),
		"Einsum":         tensor(lowerEinsum),
		"GatherElements": tensor(lowerGatherElements),
		"OneHot":         tensor(lowerOneHot),
		"Trilu":          tensor(lowerTrilu),

		"Loop":               control(lowerLoop, true),
		"Scan":               control(lowerScan, true),
		"If":                 control(lowerIf, true),
		"SequenceEmpty":      control(lowerSequenceEmpty, false),
		"SequenceConstruct":  control(lowerSequenceConstruct, false),
		"SequenceInsert":     control(lowerSequenceInsert, true),
		"SequenceAt":         control(lowerSequenceAt, true),
		"SequenceLength":     control(lowerSequenceLength, true),
		"ConcatFromSequence": control(lowerConcatFromSequence, true),
	}
}

// SupportedOps returns the operator types the graph implements, sorted.
func SupportedOps() []string {
	return slices.Sorted(maps.Keys(operators))
}

// lowererFor returns the lowering of op from the operator table.
func lowererFor(op string) (lowerFunc, bool) {
	s, ok := operators[op]
	return s.lower, ok
}

// takesSequences reports whether op accepts sequence values as inputs.
func takesSequences(op string) bool {
	return operators[op].seqs
}

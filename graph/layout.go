package graph

// Layout is the order of the batch and time axes of a sequence input
// (docs/design.md, section 1.3). Package onnx detects it from a model; package
// audit is told it.
type Layout int

// Input layouts.
const (
	// UnknownLayout: the model does not say; the user must.
	UnknownLayout Layout = iota
	// BatchFirst is [batch, time, features], PyTorch's batch_first=True.
	BatchFirst
	// TimeFirst is [time, batch, features], the ONNX RNN default.
	TimeFirst
)

// String returns "batch-first", "time-first" or "unknown".
func (l Layout) String() string {
	switch l {
	case BatchFirst:
		return "batch-first"
	case TimeFirst:
		return "time-first"
	}
	return "unknown"
}

package classify

import (
	"math"

	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/graph"
)

// Options are what the audit of a binary classifier asks for (package
// audit's Options.Classify): its output is the probability of class 1,
// or a logit that the audit turns into one.
type Options struct {
	// Score is the nonconformity score of the jackknife+ sets ("" is
	// LAC).
	Score Score
	// Logits says the model's output is a logit (a model trained with
	// nn.BCEWithLogitsLoss): the audit appends a sigmoid (WithSigmoid)
	// and audits the probability with hvp.BinaryCrossEntropySigmoid,
	// whose loss, gradient and Hessian are BCEWithLogitsLoss's and whose
	// Gauss-Newton matrix is the logit's, J^T p(1-p) J.
	Logits bool
	// FlagAbove and FlagBelow are the thresholds of the risk flags (nil:
	// not audited).
	FlagAbove, FlagBelow *float64
	// ClassWeights, when set, weigh the loss terms of labels 0 and 1 (a
	// model trained with nn.BCEWithLogitsLoss(pos_weight=p) has weights
	// 1 and p: its loss on a 0/1 label is the term's BCE times p when
	// the label is 1), or with Softmax those of the K classes
	// (nn.CrossEntropyLoss's weight).
	ClassWeights []float64
	// Softmax says the model's output holds the K logits of its classes
	// (nn.CrossEntropyLoss; package audit's Loss hvp.SoftmaxCrossEntropy):
	// its audit is Multi's. Smoothing is the label_smoothing it was
	// trained with.
	Softmax   bool
	Smoothing float64
}

// Weight returns the loss weight of a term with label y: its class's
// weight, or 1 (no class weights, o nil, or y not 0 or 1).
func (o *Options) Weight(y float64) float64 {
	if o == nil || len(o.ClassWeights) != 2 || (y != 0 && y != 1) {
		return 1
	}
	return o.ClassWeights[int(y)]
}

// WithSigmoid returns g with a Sigmoid applied to its first output,
// which becomes its only output: the probability a logit stands for.
func WithSigmoid(g *graph.Graph) (*graph.Graph, error) {
	out := g.Outputs[0]
	prob := graph.ValueInfo{Name: out.Name + "_probability", Elem: out.Elem, Dims: out.Dims}
	nodes := append(append([]*graph.Node(nil), g.Nodes...), &graph.Node{Name: "rnnaudit_sigmoid", OpType: "Sigmoid", Inputs: []string{out.Name}, Outputs: []string{prob.Name}})
	return graph.New(g.Opset, g.Inputs, []graph.ValueInfo{prob}, nodes, g.Init, g.InitOrder)
}

// Point returns a binary classifier's forecast at one point: its
// probability pHat of class 1, the jackknife interval of it from the
// leave-one-block-out models' probabilities pred (ProbInterval), the
// jackknife+ set of score o.Score from pred and the training forecasts'
// leave-one-block-out residuals res (JackknifeSet, skip as there), and
// its label y (0 or 1) when has is set.
func Point(o *Options, alpha, pHat, y float64, has bool, pred []float64, res []interval.Residual, skip interval.Skip) Forecast {
	f := Forecast{Probs: BinaryProbs(pHat), Label: -1}
	f.ProbLower, f.ProbUpper = ProbInterval(alpha, pHat, pred)
	f.Set = JackknifeSet(o.Score, alpha, pred, res, skip, Uniform(math.Float64bits(pHat), math.Float64bits(y)))
	if has && (y == 0 || y == 1) {
		f.Label = int(y)
	}
	return f
}

// Between returns the labels 0 and 1 that lie in [lo, up]: a binary
// forecast's split-conformal LAC set from its split-conformal limits of
// the probability (p ± q, q the conformal quantile of the calibration
// residuals |y - p|, which are LAC scores: label y is in the set when
// |y - p| <= q).
func Between(lo, up float64) []int {
	set := []int{}
	for y := 0.0; y <= 1; y++ {
		if lo <= y && y <= up && !math.IsNaN(lo) {
			set = append(set, int(y))
		}
	}
	return set
}

package hvp_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/onnx/onnxtest"
	"gonum.org/v1/gonum/mat"
)

// reference is one case of testdata/ (see its README.md): derivatives of a
// weighted loss computed by torch.autograd on the ONNX parameterisation.
type reference struct {
	Case    string            `json:"case"`
	Model   string            `json:"model"`
	Fixture string            `json:"fixture"`
	Loss    string            `json:"loss"`
	Inputs  []onnxtest.Tensor `json:"inputs"`
	Target  []float64         `json:"target"`
	Weight  []float64         `json:"weight"`
	Params  []struct {
		Name   string `json:"name"`
		Offset int    `json:"offset"`
		Size   int    `json:"size"`
	} `json:"params"`
	Theta      []float64   `json:"theta"`
	LossValue  float64     `json:"loss_value"`
	Grad       []float64   `json:"grad"`
	V1         []float64   `json:"v1"`
	V2         []float64   `json:"v2"`
	Hv1        []float64   `json:"Hv1"`
	Hv2        []float64   `json:"Hv2"`
	GNv1       []float64   `json:"GNv1"`
	GNv2       []float64   `json:"GNv2"`
	PerSeqLoss []float64   `json:"per_seq_loss"`
	PerSeqGrad [][]float64 `json:"per_seq_grad"`
	HessEig    []float64   `json:"hessian_eigenvalues"`
	GNEig      []float64   `json:"gn_eigenvalues"`
	Hessian    [][]float64 `json:"hessian"`
	// softmax_ce: the class of every group of the last axis, and
	// nn.CrossEntropyLoss's weight and label_smoothing.
	TargetClass    []int     `json:"target_class"`
	ClassWeights   []float64 `json:"class_weights"`
	LabelSmoothing float64   `json:"label_smoothing"`
}

// withSigmoid appends a Sigmoid to the model's first output, so that our
// binary cross-entropy on probabilities equals PyTorch's BCE with logits.
func withSigmoid(t *testing.T, g *graph.Graph) *graph.Graph {
	out := g.Outputs[0]
	prob := graph.ValueInfo{Name: out.Name + "_prob", Elem: out.Elem, Dims: out.Dims}
	nodes := append(append([]*graph.Node(nil), g.Nodes...), &graph.Node{Name: "test_sigmoid", OpType: "Sigmoid", Inputs: []string{out.Name}, Outputs: []string{prob.Name}})
	ng, err := graph.New(g.Opset, g.Inputs, []graph.ValueInfo{prob}, nodes, g.Init, g.InitOrder)
	if err != nil {
		t.Fatal(err)
	}
	return ng
}

// TestAgainstPyTorch compares loss, gradient, Hessian- and
// Gauss-Newton-vector products, per-sequence gradients and the dense
// Hessian's eigenvalues with PyTorch autograd in float64 (relative error
// <= 1e-8), for RNN, LSTM and GRU, one and two layers, variable lengths,
// bidirectional and multi-horizon models; for the binary cross-entropy
// case both as BinaryCrossEntropy on an appended Sigmoid and as
// BinaryCrossEntropyLogits on the logit (whose Gauss-Newton matrix is the
// reference's), and softmax cross-entropy with class weights and label
// smoothing against nn.CrossEntropyLoss.
func TestAgainstPyTorch(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("reference cases missing from testdata (%d found): %v", len(files), err)
	}
	ctx := context.Background()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ref reference
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		variants := []string{""}
		if ref.Loss == "bce_logits" {
			variants = append(variants, "native", "sigmoid")
		}
		for _, v := range variants {
			name := ref.Case
			if v != "" {
				name += "_" + v
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				checkReference(t, ctx, ref, v)
			})
		}
	}
}

// checkReference checks one reference case; variant says how a
// bce_logits case is taken: "native", BinaryCrossEntropyLogits on the
// model's logit; "sigmoid", BinaryCrossEntropySigmoid on an appended
// Sigmoid (whose Gauss-Newton matrix is the logit's, the reference's);
// "", BinaryCrossEntropy on an appended Sigmoid (whose Gauss-Newton
// matrix is not checked).
func checkReference(t *testing.T, ctx context.Context, ref reference, variant string) {
	native := variant != ""
	g, err := onnx.Load(filepath.Join("..", ref.Model))
	if err != nil {
		t.Fatal(err)
	}
	// Our parameter vector is PyTorch's.
	if len(g.Params()) != len(ref.Params) {
		t.Fatalf("%d parameter tensors, reference has %d", len(g.Params()), len(ref.Params))
	}
	for i, p := range g.Params() {
		rp := ref.Params[i]
		if p.Name != rp.Name || p.Offset != rp.Offset || p.Size != rp.Size {
			t.Fatalf("parameter %d: %s@%d+%d, reference %s@%d+%d", i, p.Name, p.Offset, p.Size, rp.Name, rp.Offset, rp.Size)
		}
	}
	theta := g.Theta()
	if relErr(theta, ref.Theta, 1e-300) != 0 {
		t.Fatal("theta differs from the reference")
	}
	loss := hvp.SquaredError
	switch {
	case ref.Loss == "bce_logits" && variant == "native":
		loss = hvp.BinaryCrossEntropyLogits
	case ref.Loss == "bce_logits" && variant == "sigmoid":
		g = withSigmoid(t, g)
		loss = hvp.BinaryCrossEntropySigmoid
	case ref.Loss == "bce_logits":
		g = withSigmoid(t, g)
		loss = hvp.BinaryCrossEntropy
	case ref.Loss == "softmax_ce":
		loss = hvp.SoftmaxCrossEntropy
		K := len(ref.ClassWeights)
		for c, cl := range ref.TargetClass {
			y := hvp.SoftTargets(cl, K, ref.ClassWeights, ref.LabelSmoothing)
			if e := relErr(y, ref.Target[c*K:(c+1)*K], 1e-300); e > 1e-15 {
				t.Fatalf("SoftTargets(%d) = %v, the reference's %v", cl, y, ref.Target[c*K:(c+1)*K])
			}
		}
	}
	var in []*graph.Tensor
	for _, gi := range g.Inputs {
		for _, ri := range ref.Inputs {
			if ri.Name == gi.Name {
				in = append(in, ri.Tensor())
			}
		}
	}
	p, err := g.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	o := &hvp.Objective{Loss: loss, Batches: []hvp.Batch{{Program: p, Inputs: in, Target: ref.Target, Weight: ref.Weight}}}
	P := len(theta)
	check := func(what string, got, want []float64) {
		t.Helper()
		if e := relErr(got, want, 1e-300); e > 1e-8 {
			t.Errorf("%s: relative error %.3g", what, e)
		}
	}
	grad := make([]float64, P)
	lv, err := o.Gradient(ctx, theta, grad)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lv-ref.LossValue) > 1e-10*math.Abs(ref.LossValue) {
		t.Errorf("loss %.15g, PyTorch %.15g", lv, ref.LossValue)
	}
	check("gradient", grad, ref.Grad)
	for _, c := range []struct {
		name    string
		c       hvp.Curvature
		v, want []float64
	}{
		{"Hv1", hvp.Hessian, ref.V1, ref.Hv1}, {"Hv2", hvp.Hessian, ref.V2, ref.Hv2},
		{"GNv1", hvp.GaussNewton, ref.V1, ref.GNv1}, {"GNv2", hvp.GaussNewton, ref.V2, ref.GNv2},
	} {
		if c.c == hvp.GaussNewton && ref.Loss == "bce_logits" && !native {
			// Our Gauss-Newton matrix splits model and loss at the
			// model's output, here the probability after the
			// appended Sigmoid; the reference splits at the logit.
			// Both are valid and positive semi-definite, but differ.
			continue
		}
		out := make([]float64, P)
		if err := o.Apply(ctx, c.c, theta, c.v, out); err != nil {
			t.Fatal(err)
		}
		check(c.name, out, c.want)
	}
	// Per-sequence gradients from one batch per sequence.
	fx := fixtureByName(t, strings.TrimSuffix(filepath.Base(ref.Fixture), ".json"))
	if ref.Loss == "bce_logits" {
		fx = &onnxtest.Fixture{Name: fx.Name, Layout: fx.Layout, Outputs: fx.Outputs}
	}
	parts := perSequenceOf(t, g, fx.Layout, in, o, ref.Target, ref.Weight, p)
	jobs := make([]hvp.Job, len(parts.Batches))
	for i := range jobs {
		jobs[i] = hvp.Job{Batch: i}
	}
	grads := make([][]float64, len(jobs))
	losses := make([]float64, len(jobs))
	if err := parts.Gradients(ctx, theta, jobs, grads, losses); err != nil {
		t.Fatal(err)
	}
	if len(grads) != len(ref.PerSeqGrad) {
		t.Fatalf("%d sequences, reference %d", len(grads), len(ref.PerSeqGrad))
	}
	for i := range grads {
		check("per-sequence gradient "+string(rune('0'+i)), grads[i], ref.PerSeqGrad[i])
	}
	check("per-sequence losses", losses, ref.PerSeqLoss)
	// The same from one batched pass, split by example.
	axes := make([]int, len(in))
	for i, x := range in {
		if x.Rank() > 1 && strings.HasPrefix(fx.Layout, "time") {
			axes[i] = 1
		}
	}
	o.Batches[0].ExampleAxes = axes
	clear(losses)
	for i := range grads {
		grads[i] = nil
	}
	if err := o.PerExampleGradients(ctx, theta, []hvp.Job{{Batch: 0}}, [][][]float64{grads}, [][]float64{losses}); err != nil {
		t.Fatal(err)
	}
	for i := range grads {
		check("one-pass per-sequence gradient "+string(rune('0'+i)), grads[i], ref.PerSeqGrad[i])
	}
	check("one-pass per-sequence losses", losses, ref.PerSeqLoss)
	// Dense Hessian and Gauss-Newton eigenvalues.
	for _, c := range []struct {
		name string
		c    hvp.Curvature
		want []float64
	}{{"Hessian", hvp.Hessian, ref.HessEig}, {"Gauss-Newton", hvp.GaussNewton, ref.GNEig}} {
		if c.c == hvp.GaussNewton && ref.Loss == "bce_logits" && !native {
			continue // see above
		}
		m, err := o.Dense(ctx, c.c, theta)
		if err != nil {
			t.Fatal(err)
		}
		var eig mat.EigenSym
		if !eig.Factorize(m, false) {
			t.Fatal("eigendecomposition failed")
		}
		got := eig.Values(nil)
		scale := math.Max(math.Abs(c.want[0]), math.Abs(c.want[len(c.want)-1]))
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-8*scale {
				t.Errorf("%s eigenvalue %d: %.12g, PyTorch %.12g", c.name, i, got[i], c.want[i])
				break
			}
		}
		if c.c == hvp.Hessian && ref.Hessian != nil {
			for i := 0; i < P; i++ {
				for j := 0; j < P; j++ {
					want := (ref.Hessian[i][j] + ref.Hessian[j][i]) / 2
					if math.Abs(m.At(i, j)-want) > 1e-8*scale {
						t.Fatalf("H[%d][%d] = %.12g, PyTorch %.12g", i, j, m.At(i, j), want)
					}
				}
			}
		}
	}
}

// perSequenceOf splits a one-batch objective into one batch per sequence.
func perSequenceOf(t *testing.T, g *graph.Graph, layout string, in []*graph.Tensor, whole *hvp.Objective, target, weight []float64, p *graph.Program) *hvp.Objective {
	t.Helper()
	st := p.NewState()
	outs, err := st.Forward(g.Theta(), in)
	if err != nil {
		t.Fatal(err)
	}
	outShape := outs[0].Shape
	ax := 0
	if strings.HasPrefix(layout, "time") && len(outShape) == 3 {
		ax = 1
	}
	inAx := 0
	if strings.HasPrefix(layout, "time") {
		inAx = 1
	}
	o := &hvp.Objective{Loss: whole.Loss}
	B := outShape[ax]
	for b := 0; b < B; b++ {
		var bin []*graph.Tensor
		for _, x := range in {
			if x.Rank() == 1 {
				bin = append(bin, sliceBatch(x, 0, b))
			} else {
				bin = append(bin, sliceBatch(x, inAx, b))
			}
		}
		bp, err := g.Compile(bin)
		if err != nil {
			t.Fatal(err)
		}
		o.Batches = append(o.Batches, hvp.Batch{Program: bp, Inputs: bin,
			Target: sliceFloats(target, outShape, ax, b), Weight: sliceFloats(weight, outShape, ax, b)})
	}
	return o
}

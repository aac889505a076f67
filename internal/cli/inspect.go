package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/spf13/pflag"
)

const inspectUsage = `usage: audit inspect --model m.onnx [--input NAME=A,B] [--output y[:K]]

Describe a model: its inputs with what fills each, its outputs with the
one audited, the detected layout, the operators it uses, its parameter
tensors (the flat vector the audit differentiates) and the initializers
taken as constants with why, and a trial run on a small batch.

Flags:
%s
Examples:
  audit inspect --model examples/synthetic/model.onnx
  audit inspect --model lstm.onnx --layout time-first
`

func inspect(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "the ONNX model file (required)")
	layoutFlag := fs.String("layout", "auto", "auto, batch-first or time-first (for the trial run)")
	inputFlags := fs.StringArray("input", nil, "fill a model input from these columns: NAME=COL1,COL2 (repeatable)")
	outputFlag := fs.String("output", "", "the forecast output, y or y:0 (default: the first output)")
	fs.Usage = func() { fmt.Fprintf(stdout, inspectUsage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp // pflag has printed the usage
		}
		if hint := singleDash(fs, err); hint != "" {
			return usagef("inspect: %s", hint)
		}
		return usagef("inspect: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("inspect: unexpected argument %q", fs.Arg(0))
	}
	if *model == "" {
		return usagef("inspect: --model is required")
	}
	var layout onnx.Layout
	switch strings.ToLower(*layoutFlag) {
	case "auto", "":
	case "batch-first":
		layout = onnx.BatchFirst
	case "time-first":
		layout = onnx.TimeFirst
	default:
		return usagef("inspect: --layout %q: choose auto, batch-first or time-first", *layoutFlag)
	}
	given := map[string][]string{}
	for _, in := range *inputFlags {
		name, cols, ok := strings.Cut(in, "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(cols) == "" {
			return usagef("inspect: --input %q: give a model input and its columns, such as --input x_cat=store,dow", in)
		}
		for _, c := range strings.Split(cols, ",") {
			given[strings.TrimSpace(name)] = append(given[strings.TrimSpace(name)], strings.TrimSpace(c))
		}
	}
	out, col, err := modelio.ParseOutput(*outputFlag)
	if err != nil {
		return usagef("inspect: --output %q: give the forecast output's name, or name:column such as y:0", *outputFlag)
	}
	g, pruned, err := onnx.LoadOutput(*model, out)
	if err != nil {
		return err
	}
	return describe(stdout, *model, g, layout, &modelView{given: given, pruned: pruned, col: col, named: out != ""})
}

// modelView is what inspect knows besides the graph: the --input columns,
// the outputs left out and the chosen column (-1: none).
type modelView struct {
	given  map[string][]string
	pruned *onnx.Pruned
	col    int
	named  bool // --output named the forecast
}

// describe writes the inspect report of g; a known layout overrides the
// detected one. v may be nil.
func describe(w io.Writer, path string, g *graph.Graph, layout onnx.Layout, v *modelView) error {
	if v == nil {
		v = &modelView{col: -1}
	}
	why := "given by --layout"
	if layout == onnx.Unknown {
		layout, why = onnx.DetectLayout(g)
	}
	fmt.Fprintf(w, "Model %s (ONNX opset %d)\n\n", path, g.Opset)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Inputs\ttype\tshape\tfilled with")
	main := mainInput(g, v.given)
	lengths := false
	for _, in := range g.Inputs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", terminalSafe(in.Name), in.Elem, in.ShapeString(), terminalSafe(fillText(g, in, v.given, main, &lengths)))
	}
	if v.pruned != nil {
		for _, in := range v.pruned.Inputs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\tnothing: only outputs not audited read it\n", terminalSafe(in.Name), in.Elem, in.ShapeString())
		}
	}
	fmt.Fprintln(tw, "Outputs\t\t\t")
	for _, o := range g.Outputs {
		what := "the forecast (audited)"
		if v.col >= 0 {
			what = fmt.Sprintf("the forecast: column %d of the last axis (audited)", v.col)
		} else if len(o.Dims) > 0 && o.Dims[len(o.Dims)-1].Value > 1 {
			what = fmt.Sprintf("the forecast (audited): its last axis of %d values is taken as horizons unless --output %s:K names one column or --horizons says so", o.Dims[len(o.Dims)-1].Value, o.Name)
		}
		if v.pruned != nil && len(v.pruned.Outputs) > 0 && !v.named {
			what = "a candidate forecast, described below (the audit runs every output on the training data and audits the one that fits the targets best; --output names one)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", terminalSafe(o.Name), o.Elem, o.ShapeString(), terminalSafe(what))
	}
	if v.pruned != nil {
		for _, o := range v.pruned.Outputs {
			what := fmt.Sprintf("not audited (choose it with --output %s)", o.Name)
			if !v.named {
				what = fmt.Sprintf("a candidate forecast (described with --output %s)", o.Name)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", terminalSafe(o.Name), o.Elem, o.ShapeString(), terminalSafe(what))
		}
	}
	tw.Flush()
	if v.pruned != nil && v.pruned.Nodes > 0 {
		fmt.Fprintf(w, "(%s that only the outputs not audited need are left out.)\n", plural(v.pruned.Nodes, "node"))
	}
	fmt.Fprintf(w, "\nLayout: %s", layout)
	if why != "" {
		fmt.Fprintf(w, " (%s)", why)
	}
	fmt.Fprintln(w)
	if warn := fixedShapeWarning(g, layout); warn != "" {
		fmt.Fprintf(w, "\nWarning: %s\n", warn)
	}

	var ops []string
	for _, oc := range g.OpTypes() {
		ops = append(ops, fmt.Sprintf("%s×%d", oc.OpType, oc.Count))
	}
	fmt.Fprintf(w, "\nOperators (%d nodes): %s\n", len(g.Nodes), strings.Join(ops, ", "))

	which := "every float initializer the forecast depends on, trained with the model, except the constants below"
	if g.TrainedRecord() {
		which = "the initializers the export recorded as trained (metadata " + graph.TrainedKey + ")"
	}
	fmt.Fprintf(w, "\nParameters: %d in %d tensors: %s\n", g.NumParams(), len(g.Params()), which)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  offset\tsize\tshape\tname\trole")
	for _, p := range g.Params() {
		fmt.Fprintf(tw, "  %d\t%d\t%v\t%s\t%s\n", p.Offset, p.Size, p.Shape, terminalSafe(p.Name), terminalSafe(onnx.ParamRole(g, p.Name)))
	}
	tw.Flush()
	if cs := g.Constants(); len(cs) > 0 {
		fmt.Fprintf(w, "\nConstants (initializers the forecast depends on that are not parameters): %d\n", len(cs))
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  shape\tname\twhy")
		for _, c := range cs {
			fmt.Fprintf(tw, "  %v\t%s\t%s\n", c.Shape, terminalSafe(c.Name), terminalSafe(c.Reason))
		}
		tw.Flush()
	}

	ran, err := trialRun(g, layout)
	if err != nil {
		fmt.Fprintf(w, "\nTrial run: failed (the error follows on standard error).\n")
		return &contextError{path + ": the trial run failed", err}
	}
	fmt.Fprintf(w, "\nTrial run: %s\n", ran)
	return nil
}

// fixedShapeWarning says, for a model whose sequence input has a fixed
// batch size or number of steps (a PyTorch export without dynamic_axes),
// that the audit cannot feed it its data and how to export it again; ""
// when both are open.
func fixedShapeWarning(g *graph.Graph, layout onnx.Layout) string {
	batchAxis, timeAxis := 0, 1
	if layout == onnx.TimeFirst {
		batchAxis, timeAxis = 1, 0
	}
	for _, in := range g.Inputs {
		if dt, _ := in.Elem.DType(); dt != graph.Float || len(in.Dims) != 3 {
			continue
		}
		var fixed []string
		axes := map[int]string{}
		if d := in.Dims[batchAxis].Value; d >= 0 {
			fixed = append(fixed, fmt.Sprintf("the batch size (%d)", d))
			axes[batchAxis] = "batch"
		}
		if d := in.Dims[timeAxis].Value; d >= 0 {
			fixed = append(fixed, fmt.Sprintf("the number of steps (%d)", d))
			axes[timeAxis] = "time"
		}
		if len(fixed) == 0 {
			return ""
		}
		dyn := []string{fmt.Sprintf("%q: %s", in.Name, axesMap(axes))}
		var names []string
		for _, o := range g.Outputs {
			names = append(names, fmt.Sprintf("%q", o.Name))
			oa := map[int]string{}
			for ax, name := range axes {
				if ax < len(o.Dims) && o.Dims[ax].Value == in.Dims[ax].Value {
					oa[ax] = name
				}
			}
			if len(oa) > 0 {
				dyn = append(dyn, fmt.Sprintf("%q: %s", o.Name, axesMap(oa)))
			}
		}
		call := fmt.Sprintf("\n    torch.onnx.export(model, (x,), \"model.onnx\", input_names=[%q], output_names=[%s],\n"+
			"                      dynamic_axes={%s})", in.Name, strings.Join(names, ", "), strings.Join(dyn, ", "))
		steps := in.Dims[timeAxis].Value
		unrolled := fmt.Sprintf("If the model is a Python loop traced by torch.onnx.export, it is unrolled for %d steps and dynamic axes do not undo that; "+
			"for other lengths export nn.RNN, nn.LSTM or nn.GRU, or a torch.jit.script-ed loop (which exports as Loop)", steps)
		if _, batchFixed := axes[batchAxis]; !batchFixed {
			return fmt.Sprintf("the export fixes the number of steps (%d) of input %q: the model runs only on sequences of exactly %d steps, and the audit takes it when every sequence has %d. %s, with dynamic axes:%s",
				steps, in.Name, steps, steps, unrolled, call)
		}
		b := in.Dims[batchAxis].Value
		runs := fmt.Sprintf("the audit runs the model on chunks of %d sequences (the last chunk padded)", b)
		if b == 1 {
			runs = "the audit runs the model on one sequence at a time"
		}
		if steps >= 0 {
			runs += fmt.Sprintf(", on sequences of exactly %d steps", steps)
		}
		msg := fmt.Sprintf("the export fixes %s of input %q: %s. "+
			"For one pass per batch, export it again with dynamic axes:%s", strings.Join(fixed, " and "), in.Name, runs, call)
		if steps >= 0 {
			msg += "\n" + unrolled + "."
		}
		return msg
	}
	return ""
}

// axesMap writes axes as a Python dict literal in axis order: {0: "batch", 1: "time"}.
func axesMap(axes map[int]string) string {
	var parts []string
	for ax := range 3 {
		if name, ok := axes[ax]; ok {
			parts = append(parts, fmt.Sprintf("%d: %q", ax, name))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// trialRun evaluates the model on a small batch of zeros (2 sequences of
// 5 steps) when the input shapes allow it, and says what came out; the
// error says why the model does not run.
func trialRun(g *graph.Graph, layout onnx.Layout) (string, error) {
	const batch, steps = 2, 5
	inputs, ranBatch, ranSteps, skip, err := zeroInputs(g, layout, batch, steps)
	if skip != "" || err != nil {
		return skip, err
	}
	outs, err := g.Run(nil, inputs)
	if err != nil {
		return "", err
	}
	var parts []string
	for i, o := range outs {
		parts = append(parts, fmt.Sprintf("%s %v", g.Outputs[i].Name, o.Shape))
	}
	verb := "give"
	if ranBatch == 1 {
		verb = "gives"
	}
	return fmt.Sprintf("%s of %s %s %s", plural(ranBatch, "sequence"), plural(ranSteps, "step"), verb, strings.Join(parts, ", ")), nil
}

// plural returns "1 step", "5 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// zeroInputs returns inputs of zeros for g, batch sequences of steps
// steps where the declared shapes leave the sizes open (integer inputs,
// sequence lengths, hold steps), and the batch size and number of steps
// that fixed dimensions decide. skip says why no inputs can be made (a
// dimension that is neither fixed nor the batch or time axis).
func zeroInputs(g *graph.Graph, layout onnx.Layout, batch, steps int) (inputs []*graph.Tensor, ranBatch, ranSteps int, skip string, err error) {
	ranBatch, ranSteps = batch, steps
	for _, in := range g.Inputs {
		dims := make([]int, len(in.Dims))
		_, static := modelio.StaticWidth(g, in)
		for i, d := range in.Dims {
			switch {
			case d.Value >= 0:
				dims[i] = d.Value
			case static: // [batch, S] in either layout
				dims[i] = batch
			case i == 0 && (layout == onnx.BatchFirst || len(in.Dims) == 1):
				dims[i] = batch
			case i == 1 && layout == onnx.BatchFirst, i == 0 && layout == onnx.TimeFirst:
				dims[i] = steps
			case i == 1 && layout == onnx.TimeFirst:
				dims[i] = batch
			default:
				return nil, 0, 0, fmt.Sprintf("skipped (the size of dimension %d of input %q is not known)", i, in.Name), nil
			}
		}
		if _, err := graph.CheckShape(dims); err != nil {
			return nil, 0, 0, "", fmt.Errorf("input %q declared %s: %w", in.Name, in.ShapeString(), err)
		}
		if dt, _ := in.Elem.DType(); dt == graph.Float && len(dims) == 3 {
			ranBatch, ranSteps = dims[0], dims[1]
			if layout == onnx.TimeFirst {
				ranBatch, ranSteps = dims[1], dims[0]
			}
		}
		if dt, _ := in.Elem.DType(); dt == graph.Int {
			t := graph.NewInt(dims, nil) // category codes 0
			if len(dims) <= 1 {
				for i := range t.I {
					t.I[i] = int64(steps) // sequence lengths
				}
			}
			inputs = append(inputs, t)
		} else {
			inputs = append(inputs, graph.NewFloat(dims, nil))
		}
	}
	return inputs, ranBatch, ranSteps, "", nil
}

// fillText says what fills graph input in, by the rules of the audit
// (audit.Options.Inputs): the sequence lengths, the columns --input
// names, the feature columns, or the column of the input's name.
func fillText(g *graph.Graph, in graph.ValueInfo, given map[string][]string, main string, lengths *bool) string {
	dt, _ := in.Elem.DType()
	cols, named := given[in.Name]
	S, static := modelio.StaticWidth(g, in)
	switch {
	case static && named && len(cols) != S:
		return fmt.Sprintf("nothing: it takes %d per-sequence values (static covariates), --input names %d columns", S, len(cols))
	case static && named:
		return "per-sequence values (static covariates) from columns " + strings.Join(cols, ", ") + " (--input), each constant within a sequence"
	case static && S == 1:
		return fmt.Sprintf("a per-sequence value (static covariate) from the column named %q, constant within a sequence (or --input %s=COLUMN)", in.Name, in.Name)
	case static:
		return fmt.Sprintf("%d per-sequence values (static covariates): name their columns with --input %s=A,B,..., each constant within a sequence", S, in.Name)
	case named && len(in.Dims) == 2 && len(cols) != 1:
		return fmt.Sprintf("nothing: it takes one column per step, --input names %d", len(cols))
	case named:
		return "columns " + strings.Join(cols, ", ") + " (--input)"
	case dt == graph.Int && len(in.Dims) <= 1 && !*lengths:
		*lengths = true
		return "the sequence lengths"
	case in.Name == main:
		return "the feature columns: every column but the id, step and target that no other input takes, in file order (or --features)"
	case len(in.Dims) == 2:
		return fmt.Sprintf("the column named %q (or --input %s=COLUMN)", in.Name, in.Name)
	case dt == graph.Int && len(in.Dims) == 3:
		return fmt.Sprintf("category codes: name the columns with --input %s=A,B,...", in.Name)
	}
	return "nothing: rnnaudit cannot fill it"
}

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/spf13/pflag"
)

func inspect(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	model := fs.String("model", "", "the ONNX model file (required)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: audit inspect --model m.onnx\n\nDescribe a model: inputs and outputs with shapes and detected layout,\noperators, parameter tensors and their total count.\n\nFlags:\n%s\nExample:\n  audit inspect --model examples/synthetic/model.onnx\n", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.Usage()
			return errHelp
		}
		return usagef("inspect: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("inspect: unexpected argument %q", fs.Arg(0))
	}
	if *model == "" {
		return usagef("inspect: --model is required")
	}
	g, err := onnx.Load(*model)
	if err != nil {
		return err
	}
	return describe(stdout, *model, g)
}

// describe writes the inspect report of g.
func describe(w io.Writer, path string, g *graph.Graph) error {
	layout, why := onnx.DetectLayout(g)
	fmt.Fprintf(w, "Model %s (ONNX opset %d)\n\n", path, g.Opset)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Inputs\ttype\tshape\t")
	for _, in := range g.Inputs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", in.Name, in.Elem, in.ShapeString())
	}
	fmt.Fprintln(tw, "Outputs\t\t\t")
	for _, o := range g.Outputs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", o.Name, o.Elem, o.ShapeString())
	}
	tw.Flush()
	fmt.Fprintf(w, "\nLayout: %s", layout)
	if why != "" {
		fmt.Fprintf(w, " (%s)", why)
	}
	fmt.Fprintln(w)

	var ops []string
	for _, oc := range g.OpTypes() {
		ops = append(ops, fmt.Sprintf("%s×%d", oc.OpType, oc.Count))
	}
	fmt.Fprintf(w, "\nOperators (%d nodes): %s\n", len(g.Nodes), strings.Join(ops, ", "))

	fmt.Fprintf(w, "\nParameters: %d in %d tensors\n", g.NumParams(), len(g.Params()))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \toffset\tsize\tshape\tname\t")
	for _, p := range g.Params() {
		fmt.Fprintf(tw, "  \t%d\t%d\t%v\t%s\t\n", p.Offset, p.Size, p.Shape, p.Name)
	}
	return tw.Flush()
}

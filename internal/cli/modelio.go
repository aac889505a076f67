package cli

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// mainInput is the model input that takes the feature columns: the first
// float input of rank 3 (or of unknown shape) that --input does not fill;
// "" when there is none.
func mainInput(g *graph.Graph, given map[string][]string) string {
	for _, in := range g.Inputs {
		dt, _ := in.Elem.DType()
		if _, named := given[in.Name]; !named && dt == graph.Float && (in.Dims == nil || len(in.Dims) == 3) {
			return in.Name
		}
	}
	return ""
}

// modelColumns makes the columns --features and --input name the columns
// read, once the model's inputs are known: with --features, those fill
// the model's input of features and the --input columns are read too.
func (p *plan) modelColumns(g *graph.Graph) error {
	if len(p.f.features) == 0 {
		return nil
	}
	main := mainInput(g, p.opt.Inputs)
	if main == "" {
		return usagef("--features: every float input of the model is filled by --input; drop --features or that --input")
	}
	if p.opt.Inputs == nil {
		p.opt.Inputs = map[string][]string{}
	}
	p.opt.Inputs[main] = p.f.features
	cols := slices.Clone(p.f.features)
	names := make([]string, 0, len(p.opt.Inputs))
	for name := range p.opt.Inputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, c := range p.opt.Inputs[name] {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		}
	}
	// An input [batch, time] named like a column of the data takes it.
	header := csvHeader(p.f.data)
	for _, in := range g.Inputs {
		if _, named := p.opt.Inputs[in.Name]; !named && len(in.Dims) == 2 && slices.Contains(header, in.Name) && !slices.Contains(cols, in.Name) {
			cols = append(cols, in.Name)
		}
	}
	p.read.Features = cols
	return nil
}

// csvHeader returns the column names of the CSV file at path, or nil when
// it cannot be read (reading the data then names the problem).
func csvHeader(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(io.LimitReader(f, 1<<20)))
	r.TrimLeadingSpace = true
	rec, err := r.Read()
	if err != nil {
		return nil
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(strings.TrimPrefix(rec[i], "\ufeff"))
	}
	return rec
}

// inputsLine says which columns fill the model's inputs, in which order,
// and how they were chosen: a model trained on the same columns in
// another order runs without error but forecasts poorly.
func inputsLine(res *audit.Result, train *blocks.Dataset, f *flags) string {
	var main string
	var others []string
	byFlag := map[string]bool{}
	for _, in := range f.inputs {
		name, _, _ := strings.Cut(in, "=")
		byFlag[strings.TrimSpace(name)] = true
	}
	for _, in := range res.Model.Inputs {
		switch {
		case in.Lengths:
			others = append(others, in.Name+" ← the sequence lengths")
		case in.Static:
			how := "the column of its name"
			if byFlag[in.Name] {
				how = "--input"
			}
			others = append(others, fmt.Sprintf("%s ← %s, one value per sequence (%s)", in.Name, strings.Join(in.Columns, ", "), how))
		case byFlag[in.Name]:
			others = append(others, fmt.Sprintf("%s ← %s (--input)", in.Name, strings.Join(in.Columns, ", ")))
		case main == "" && in.Type == "float" && !(len(in.Columns) == 1 && in.Columns[0] == in.Name):
			main = in.Name
			how := fmt.Sprintf("every column but %s, %s and %s, in file order; choose others or another order with --features",
				train.IDCol, train.TimeCol, strings.Join(train.Targets, ", "))
			if len(res.Model.Inputs) > 1 {
				how = fmt.Sprintf("every column but %s, %s, %s and those of the other inputs, in file order; choose others or another order with --features",
					train.IDCol, train.TimeCol, strings.Join(train.Targets, ", "))
			}
			if len(f.features) > 0 {
				how = "as given by --features"
			}
			others = append([]string{fmt.Sprintf("Features, in the order the model takes them: %s (%s).", strings.Join(in.Columns, ", "), how)}, others...)
		default:
			others = append(others, fmt.Sprintf("%s ← %s (the column of its name)", in.Name, strings.Join(in.Columns, ", ")))
		}
	}
	if main == "" {
		return "Model inputs: " + strings.Join(others, "; ") + "."
	}
	if len(others) == 1 {
		return others[0]
	}
	return others[0] + " Other inputs: " + strings.Join(others[1:], "; ") + "."
}

// outputLine names the outputs the audit left out; "" when the model has
// one output.
func outputLine(res *audit.Result, pruned *onnx.Pruned) string {
	if pruned == nil || len(pruned.Outputs) == 0 {
		return ""
	}
	var names []string
	for _, o := range pruned.Outputs {
		names = append(names, o.Name)
	}
	return fmt.Sprintf("Forecast output: %s; not audited: %s (choose another with --output).", res.Model.Output, strings.Join(names, ", "))
}

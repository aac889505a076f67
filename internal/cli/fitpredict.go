package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/artifact"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/internal/errs"
	"github.com/rnnaudit/rnnaudit/internal/userfile"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/reports"
	"github.com/spf13/pflag"
)

// fitCmd is "audit fit": the audit's flags (without --test) and --save;
// it fits the audit on the training data (and --calibration) and saves
// what intervals for new sequences need.
func fitCmd(args []string, stdout, stderr io.Writer) error {
	save, rest, err := cutFlag(args, "save")
	if err != nil {
		return err
	}
	for _, a := range rest {
		if a == "--test" || strings.HasPrefix(a, "--test=") {
			return usagef("audit fit takes no --test: fit once, then give each test file to audit predict --load")
		}
	}
	if save == "" && !helpAsked(rest) {
		return usagef("audit fit needs --save audit.rna: the file audit predict --load reads")
	}
	p, err := parseAs(rest, true)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage())
		return err
	}
	if err != nil {
		return err
	}
	if p.f.test != "" {
		return usagef("audit fit takes no test data (the configuration gives test: %s): fit once, then give each test file to audit predict --load", p.f.test)
	}
	if len(p.outputs) > 0 {
		return usagef("audit fit writes no report (%s %s): audit predict --load %s --data new.csv --out report.html does", p.outputs[0].flag, p.outputs[0].path, save)
	}
	if err := p.checkFiles(); err != nil {
		return err
	}
	if err := checkIdentity(p.inputFiles(), []namedFile{{"--save", save}}); err != nil {
		return err
	}
	// The model as audit loads it: the --output chosen (and only what it
	// needs), the columns of --features and --input, the layout.
	sum, err := fileSHA256(p.f.model, "--model")
	if err != nil {
		return err
	}
	g, pruned, err := p.loadModel()
	if err != nil {
		return err
	}
	if err := p.loadTrainInit(g); err != nil {
		return err
	}
	train, err := blocks.ReadFile(p.f.data, &p.read)
	if err != nil {
		return err
	}
	if err := p.readCalibration(train); err != nil {
		return err
	}
	g, _, chosen, err := p.chooseOutput(g, pruned, train)
	if err != nil {
		return err
	}
	if err := checkSequenceMemory(g, p.opt.Layout, train, p.opt.Calibration); p.opt.Window == 0 && err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var prog *progress
	if !p.f.quiet {
		prog = newProgress(stderr)
		p.opt.Progress = prog.report
	}
	f, err := audit.Fit(ctx, g, train, &p.opt)
	if prog != nil {
		prog.done()
	}
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	var buf bytes.Buffer
	if err := f.Save(&buf, sum); err != nil {
		return err
	}
	if err := writeAtomic(save, buf.Bytes()); err != nil {
		return err
	}
	if !p.f.quiet && chosen != "" {
		fmt.Fprintln(stdout, terminalSafe(chosen))
	}
	if !p.f.quiet {
		fmt.Fprintf(stdout, "Fitted audit saved to %s (%d bytes): give new data to audit predict --load %s --data new.csv.\n", save, buf.Len(), save)
	}
	return nil
}

// predictCmd is "audit predict": --load, --data, optional --model (default:
// the fitted model's path) and --out; it gives every forecast of the data
// its intervals from a saved fit.
func predictCmd(args []string, stdout, stderr io.Writer) error {
	var load, data, model string
	var outs []string
	var quiet bool
	var fanCharts string
	fs := pflag.NewFlagSet("audit predict", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&load, "load", "", "the fitted audit (audit fit --save)")
	fs.StringVar(&data, "data", "", "the new sequences, CSV with the training file's columns (labels optional)")
	fs.StringVar(&model, "model", "", "the ONNX model (default: the path the fit recorded)")
	fs.StringArrayVar(&outs, "out", nil, "write a report (.html, .md or .json) or every interval (.csv); repeatable")
	fs.BoolVar(&quiet, "quiet", false, "print neither progress nor the summary")
	fs.StringVar(&fanCharts, "fan-charts", "auto", "the sequences drawn as fan charts: auto, auto:N, first:N, all, none or ids")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, usage())
			return errHelp
		}
		return usagef("%v (run 'audit --help')", err)
	}
	if load == "" || data == "" {
		return usagef("audit predict needs --load audit.rna and --data new.csv (run 'audit --help')")
	}
	fans, err := reports.ParseFanCharts(fanCharts)
	if err != nil {
		return usagef("--fan-charts %s: %v", fanCharts, err)
	}
	var formats []reports.Format
	for _, o := range outs {
		format, err := reports.FormatOf(o)
		if err != nil {
			return usagef("--out %s: the extension must be .html, .md, .json or .csv", o)
		}
		formats = append(formats, format)
	}
	h, err := readArtifactHeader(load)
	if err != nil {
		return err
	}
	fitModel := model // "": the one the artifact records (loadFittedGraph)
	if model == "" {
		if model = h.ModelPath; model == "" {
			return usagef("--load %s records no model path: give --model", load)
		}
	}
	var outFiles []namedFile
	for _, o := range outs {
		outFiles = append(outFiles, namedFile{"--out", o})
	}
	if err := checkIdentity([]namedFile{{"--load", load}, {"--data", data}, {"--model", model}}, outFiles); err != nil {
		return err
	}
	f, h, g, err := loadFittedGraph(load, fitModel)
	if err != nil {
		return err
	}
	if err := checkFitColumns(data, load, h); err != nil {
		return err
	}
	ro := blocks.Options{IDCol: h.IDCol, TimeCol: h.TimeCol, Targets: h.Targets, Features: h.Features, Shift: h.Shift, OptionalTargets: true}
	test, err := blocks.ReadFile(data, &ro)
	if err != nil {
		return err
	}
	if err := checkFanIDs(fans, test, nil); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := f.Predict(ctx, test)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	opts := &reports.Options{
		Columns: &reports.Columns{ID: h.IDCol, Time: h.TimeCol, Target: strings.Join(h.Targets, ","), Features: h.Features, Shift: h.Shift},
		Command: commandLine(append([]string{"predict"}, args...)), ParamRoles: map[string]string{},
		FanCharts: fans, ToolVersion: versionString(),
	}
	for _, prm := range g.Params() {
		opts.ParamRoles[prm.Name] = onnx.ParamRole(g, prm.Name)
	}
	var written []string
	for i, o := range outs {
		w, err := reports.WriteFile(o, formats[i], res, opts)
		if err != nil {
			return err
		}
		written = append(written, w[0])
	}
	if quiet {
		return nil
	}
	if err := reports.WriteSummary(stdout, res); err != nil {
		return err
	}
	if len(written) > 0 {
		fmt.Fprintf(stdout, "Report written to %s.\n", strings.Join(written, ", "))
	}
	return nil
}

// checkFitColumns refuses data whose header lacks a column the fit read
// (the id and time columns and every feature column), naming them: the
// model's inputs are filled from the columns of the training file.
func checkFitColumns(data, load string, h artifact.Header) error {
	header := csvHeader(data)
	if header == nil {
		return nil // reading the data names the problem
	}
	var missing []string
	for _, c := range append([]string{h.IDCol, h.TimeCol}, h.Features...) {
		if !slices.Contains(header, c) && !slices.Contains(missing, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("--data %s has no column %s, which the fit (--load %s) read from %s: give data with the training file's columns %s",
		data, strings.Join(missing, ", "), load, h.TrainFile, strings.Join(append([]string{h.IDCol, h.TimeCol}, h.Features...), ", "))
}

// readArtifactHeader reads the header of the artifact at load.
func readArtifactHeader(load string) (artifact.Header, error) {
	fh, _, err := userfile.Open(load, "--load", userfile.Artifact)
	if err != nil {
		return artifact.Header{}, err
	}
	defer fh.Close()
	h, err := artifact.ReadHeader(fh)
	if err != nil {
		return h, fmt.Errorf("--load %s: %w", load, err)
	}
	return h, nil
}

// loadFittedGraph reads the artifact at load and its model (model, or
// the path the fit recorded) as the fit loaded it, checks that they
// belong together, and returns the fit, the artifact's header and the
// model's graph (all its parameters, for the report's parameter roles).
func loadFittedGraph(load, model string) (*audit.Fitted, artifact.Header, *graph.Graph, error) {
	h, err := readArtifactHeader(load)
	if err != nil {
		return nil, h, nil, err
	}
	origin := "--model"
	if model == "" {
		if model = h.ModelPath; model == "" {
			return nil, h, nil, usagef("--load %s records no model path: give --model", load)
		}
		origin = "the model recorded in " + load
	}
	g, sum, err := loadFitModel(model, origin, h)
	if err != nil {
		if derr := checkArtifact(load); derr != nil {
			return nil, h, nil, derr // a damaged header may name another model
		}
		if origin != "--model" && errors.Is(err, fs.ErrNotExist) {
			return nil, h, nil, fmt.Errorf("%s, %s, is missing: give --model", origin, model)
		}
		if origin != "--model" {
			return nil, h, nil, fmt.Errorf("%w: give --model", err)
		}
		return nil, h, nil, err
	}
	// Read as a stream: the artifact may be hundreds of MB.
	art, _, err := userfile.Open(load, "--load", userfile.Artifact)
	if err != nil {
		return nil, h, nil, err
	}
	defer art.Close()
	f, err := audit.Load(art, g, sum)
	if err != nil {
		return nil, h, nil, errs.Wrapf(err, "--load %s with --model %s: ", load, model)
	}
	return f, h, g, nil
}

// checkArtifact reads the whole artifact at load and checks its lengths
// and SHA-256 (artifact.Read), saying what failed.
func checkArtifact(load string) error {
	fh, _, err := userfile.Open(load, "--load", userfile.Artifact)
	if err != nil {
		return err
	}
	defer fh.Close()
	if _, err := artifact.Read(fh); err != nil {
		return fmt.Errorf("--load %s: %w", load, err)
	}
	return nil
}

// loadFitModel loads the model at path, which came from origin (a flag
// or the artifact), as the fit of header h loaded it (the output it
// chose, and only what that output needs) and the SHA-256 of its file,
// which audit.Load checks.
func loadFitModel(path, origin string, h artifact.Header) (*graph.Graph, [32]byte, error) {
	name, _, err := modelio.ParseOutput(h.Output)
	if err != nil {
		return nil, [32]byte{}, errs.Wrapf(err, "the artifact's output %q: ", h.Output)
	}
	sum, err := fileSHA256(path, origin)
	if err != nil {
		return nil, sum, err
	}
	g, _, err := onnx.LoadOutput(path, name)
	return g, sum, err
}

// loadModel loads the model as audit and audit fit do: only the
// forecast output --output chooses and what it needs, refusing a model
// without parameters; then the columns of --features and --input and
// the layout.
func (p *plan) loadModel() (*graph.Graph, *onnx.Pruned, error) {
	g, pruned, err := onnx.LoadOutput(p.f.model, p.output)
	if err != nil {
		return nil, nil, err
	}
	if g.NumParams() == 0 {
		return nil, nil, fmt.Errorf("%s: the model has no parameters (float initializers), so no block of data has any influence on it and there is nothing to audit; export it with its weights as initializers (audit inspect --model %s lists them)", p.f.model, p.f.model)
	}
	if err := p.modelColumns(g); err != nil {
		return nil, nil, err
	}
	if p.opt.TargetScale == nil {
		p.opt.TargetScale = g.TargetScale // recorded by the export; --target-scale wins
	}
	if err := p.settleLayout(g); err != nil {
		return nil, nil, err
	}
	return g, pruned, nil
}

// fileSHA256 is the SHA-256 of the model file at path, which came from
// origin: a fit records it and predict checks it. The file must be a
// regular one (it is read twice: hashed here, decoded by onnx) of at
// most userfile.Model's limit; it is hashed as a stream.
func fileSHA256(path, origin string) ([32]byte, error) {
	var sum [32]byte
	f, _, err := userfile.Open(path, origin, userfile.Model)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, &userfile.Error{Origin: origin, Path: path, Err: unwrapPath(err)}
	}
	return [32]byte(h.Sum(nil)), nil
}

// cutFlag removes the string flag --name (as "--name v" or "--name=v")
// from args and returns its value and the other arguments.
func cutFlag(args []string, name string) (string, []string, error) {
	var val string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--"+name:
			if i+1 >= len(args) {
				return "", nil, usagef("--%s needs a file name", name)
			}
			val = args[i+1]
			i++
		case strings.HasPrefix(a, "--"+name+"="):
			val = strings.TrimPrefix(a, "--"+name+"=")
		default:
			rest = append(rest, a)
		}
	}
	return val, rest, nil
}

// hasFlag says whether args give --name.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// helpAsked says whether args ask for help.
func helpAsked(args []string) bool {
	return hasFlag(args, "help") || hasFlag(args, "h") || len(args) > 0 && args[0] == "-h"
}

// writeAtomic writes the artifact b to path (--save) through
// userfile.WriteAtomic, so that a fit killed while saving leaves nothing
// behind (docs/artifact.md), readable by its owner only: it holds the
// training inputs.
func writeAtomic(path string, b []byte) error {
	err := userfile.WriteAtomic(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("--save %s: %w", path, err)
	}
	return nil
}

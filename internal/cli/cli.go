// Package cli is the audit command line: the audit itself and its inspect,
// fit, predict and serve commands, their flags and YAML configuration,
// progress and the rendering of errors. It is a library so that every
// binary that is the audit command (cmd/audit, and cmd/audit-beam with its
// Beam executor) calls the one entry point, Main.
package cli

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/classify"
	"github.com/rnnaudit/rnnaudit/audit/membudget"
	"github.com/rnnaudit/rnnaudit/audit/modelio"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/graph"
	"github.com/rnnaudit/rnnaudit/hvp"
	"github.com/rnnaudit/rnnaudit/onnx"
	"github.com/rnnaudit/rnnaudit/reports"
	"github.com/spf13/pflag"
)

//go:embed usage.txt
var usageText string

// usage is the text of --help (usage.txt).
func usage() string { return usageText }

// Options are what a binary adds to the command line. The zero value (or
// nil) is the audit command itself.
type Options struct {
	// Engine, when not nil, adds its flags to the audit's and may run
	// the lowrank solver's stages elsewhere (audit.Options.Executor).
	Engine Engine
}

// Main runs the command line args (without the program's name), writing
// to stdout and stderr, and returns the exit status: 0 on success (and
// for --help), 2 for a usage error, 130 when interrupted (128 + SIGINT,
// as shells report it), 1 for any other error. A binary's main is
//
//	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr, nil))
func Main(args []string, stdout, stderr io.Writer, opts *Options) int {
	var o Options
	if opts != nil {
		o = *opts
	}
	return run(args, stdout, stderr, o.Engine)
}

// A UsageError is an error in how the command was called (exit status
// 2): an unknown flag, a missing or contradictory option.
type UsageError struct {
	// Msg is the message, without the program's name.
	Msg string
}

func (e *UsageError) Error() string { return e.Msg }

// usagef is a *UsageError with a formatted message.
func usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// errInterrupted ends an audit stopped by Ctrl-C (SIGINT) or SIGTERM.
var errInterrupted = errors.New("interrupted")

// run is Main with the engine of its Options (nil: none).
func run(args []string, stdout, stderr io.Writer, engine Engine) int {
	err := dispatch(args, safeWriter{stdout}, stderr, engine)
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errInterrupted):
		printError(stderr, err)
		return 130
	case errors.As(err, &ue):
		printError(stderr, err)
		return 2
	default:
		printError(stderr, err)
		return 1
	}
}

var errHelp = errors.New("help requested")

// dispatch runs the command args names.
func dispatch(args []string, stdout, stderr io.Writer, engine Engine) error {
	if len(args) > 0 {
		switch args[0] {
		case "inspect":
			return inspect(args[1:], stdout, stderr)
		case "fit":
			return fitCmd(args[1:], stdout, stderr)
		case "predict":
			return predictCmd(args[1:], stdout, stderr)
		case "serve":
			return serveCmd(args[1:], stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usage())
			return errHelp
		}
		if !strings.HasPrefix(args[0], "-") {
			return usagef("unknown command %q: the commands are inspect, fit, predict and serve, or flags only to run an audit (run 'audit --help')", args[0])
		}
	}
	return auditCmd(args, stdout, stderr, engine)
}

// flags are the flags of an audit, bound to a FlagSet by newFlagSet.
type flags struct {
	model, data, test, config string
	calibration               string
	idCol, timeCol, target    string
	features                  []string
	inputs                    []string
	output                    string
	horizons                  int
	align                     string
	shift                     int
	layout                    string
	alpha                     float64
	blocks                    string
	blockLength               int
	window                    int
	solver, curvature         string
	rank                      int
	memory                    string
	estimator                 string
	newtonSteps               int
	damping, ridge            float64
	targetScale               string
	loss                      string
	params                    string
	low, high                 optFloat
	setScore, classWeights    string
	flagAbove, flagBelow      optFloat
	labelSmoothing            float64
	retrain                   int
	calibrationPool           int
	retrainBudget             time.Duration
	retrainMaxIter            int
	out                       []string
	json                      string
	seed                      uint64
	quiet                     bool
	version                   bool
	timings                   bool
	dampingSensitivity        bool
	pool                      string
	poolWarmup                int
	restart                   bool
	retrainStart              string
	trainBudget, trainInit    string
	fanCharts                 string
	adaptive                  adaptiveFlags
}

// newFlagSet defines the audit flags (and the engine's, when not nil) on
// a new FlagSet that reports errors instead of exiting.
func newFlagSet(f *flags, engine Engine) *pflag.FlagSet {
	fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVar(&f.model, "model", "", "the ONNX model (required)")
	fs.StringVar(&f.data, "data", "", "the training data, CSV (required)")
	fs.StringVar(&f.test, "test", "", "the test data, CSV (default: audit the training data)")
	fs.StringVar(&f.calibration, "calibration", "", "held-out labelled sequences (CSV, like the training data) for split-conformal and conformalized jackknife+ intervals; needs --test")
	fs.IntVar(&f.calibrationPool, "calibration-pool", 0, "calibrated quantiles are taken over groups of consecutive steps with at least this many calibration values (default: 19 at alpha 0.1)")
	fs.StringVar(&f.config, "config", "", "read flags from this YAML file")
	fs.StringVar(&f.idCol, "id-col", "id", "the sequence id column")
	fs.StringVar(&f.timeCol, "time-col", "t", "the step column")
	fs.StringVar(&f.target, "target", "y", "the target column")
	fs.StringSliceVar(&f.features, "features", nil, "the feature columns, in model order (default: every other column)")
	fs.StringArrayVar(&f.inputs, "input", nil, "fill a model input from these columns, in its order: NAME=COL1,COL2 (repeatable)")
	fs.StringVar(&f.output, "output", "", "the forecast output, or one column of its last axis: y or y:0 (default: the first output)")
	fs.IntVar(&f.horizons, "horizons", 0, "the forecast output's last axis holds this many horizons (default: assumed, and said so)")
	fs.StringVar(&f.align, "align", "", "where a many-to-one output's H values sit: after (the H rows after the window the model reads, the default) or last (the last H rows of the window)")
	fs.IntVar(&f.shift, "shift", 0, "take the target of row t from row t+N")
	fs.StringVar(&f.layout, "layout", "auto", "auto, batch-first or time-first")
	fs.Float64Var(&f.alpha, "alpha", 0.1, "target miscoverage: intervals aim at 1-alpha")
	fs.StringVar(&f.blocks, "blocks", "sequence", "sequence, interval or nested")
	fs.IntVar(&f.blockLength, "block-length", 0, "steps per interval block")
	fs.IntVar(&f.window, "window", 0, "cut long series into sliding windows of this many rows")
	fs.StringVar(&f.pool, "pool", "auto", "pool leave-one-out residuals by position, or across rows after a warm-up (rows; auto: rows for interval and nested blocks over few sequences)")
	fs.IntVar(&f.poolWarmup, "pool-warmup", 0, "rows at the start of a sequence kept by position when pooling across rows (0: the block length; -1: none)")
	fs.BoolVar(&f.restart, "restart", false, "start every test sequence at row 0, even one that continues a training sequence (same id, later steps)")
	fs.StringVar(&f.solver, "solver", "auto", solverList())
	fs.IntVar(&f.rank, "rank", 0, "rank of the lowrank solver's curvature (default: parameters/4, from 40 to 200)")
	fs.StringVar(&f.memory, "memory", "", "memory budget of the lowrank solver, e.g. 6G (default: half the machine's memory)")
	fs.StringVar(&f.estimator, "estimator", "newton", "newton (leave-block-out Newton step) or infinitesimal (the paper's)")
	fs.IntVar(&f.newtonSteps, "newton-steps", 0, "most Newton steps per block, iterating with the exact leave-block-out gradient (1: one step; default 20 for interval and nested blocks of at most 400 loss terms of a model at a stationary point, else 1)")
	fs.StringVar(&f.curvature, "curvature", "gauss-newton", "gauss-newton or hessian")
	fs.Float64Var(&f.damping, "damping", 0, fmt.Sprintf("damping relative to the mean eigenvalue (default for gauss-newton: from %g at a stationary point of the training loss to %g away from one, by the stationarity ratio; %g for hessian)", hvp.DefaultStationaryGaussNewtonDamping, hvp.DefaultGaussNewtonDamping, hvp.DefaultDamping))
	fs.StringVar(&f.loss, "loss", "squared-error", "squared-error, bce (cross-entropy; the output is a probability) or bce-logits (the output is a logit)")
	fs.StringVar(&f.setScore, "set-score", "lac", "the score of a classifier's prediction sets: lac, aps or raps")
	fs.StringVar(&f.classWeights, "class-weights", "", "the loss weights of labels 0 and 1, \"w0,w1\" (PyTorch's pos_weight p: 1,p), or of the K classes with softmax-ce")
	fs.Float64Var(&f.labelSmoothing, "label-smoothing", 0, "the label_smoothing of nn.CrossEntropyLoss (--loss softmax-ce)")
	fs.Var(&f.flagAbove, "flag-above", "flag a classifier's forecasts whose probability's lower limit is above this")
	fs.Var(&f.flagBelow, "flag-below", "flag a classifier's forecasts whose probability's upper limit is below this")
	fs.Float64Var(&f.ridge, "ridge", 0, "the L2 penalty (weight decay) the model was trained with")
	fs.StringVar(&f.targetScale, "target-scale", "", "MEAN,STD: the model was trained on the target scaled as (y - MEAN) / STD; the data, intervals and reports are in y's units")
	fs.StringVar(&f.params, "params", "", "audit only the parameters matching these globs")
	fs.Var(&f.low, "low", "flag values whose interval reaches below this")
	fs.Var(&f.high, "high", "flag values whose interval reaches above this")
	fs.IntVar(&f.retrain, "retrain", 0, "also re-train N blocks exactly (-1: all)")
	fs.DurationVar(&f.retrainBudget, "retrain-budget", 0, "time budget for all re-fits, e.g. 2m (0: none)")
	fs.IntVar(&f.retrainMaxIter, "retrain-max-iter", 0, "iteration cap of one re-fit (0: 200 Newton or 20000 L-BFGS)")
	fs.StringVar(&f.trainBudget, "train-budget", "", "how the model was trained, e.g. epochs=24,lr=0.005,batch=16,optimizer=adam: the early-stopping estimate")
	fs.StringVar(&f.trainInit, "train-init", "", "the same model exported before training (its initial weights): budgeted re-fits start there")
	fs.StringVar(&f.retrainStart, "retrain-start", "auto", "where block re-fits start: full (after a full re-fit), warm (from the trained parameters, tilted; for models stopped early) or auto (warm when the model is not at a stationary point)")
	fs.StringArrayVar(&f.out, "out", nil, "write a report (.html, .md or .json) or every interval (.csv); repeatable")
	fs.StringVar(&f.json, "json", "", "also write the JSON result here")
	fs.BoolVar(&f.dampingSensitivity, "damping-sensitivity", true, "re-run the solve with the damping x10 and /10 and report how far the intervals move (the exact and dual solvers re-damp their factorisation: two more solves and two more sets of perturbed forward passes)")
	fs.StringVar(&f.fanCharts, "fan-charts", "auto", "the sequences drawn as fan charts in HTML and Markdown reports: auto, auto:N, first:N, all, none or ids separated by commas")
	fs.BoolVar(&f.timings, "timings", false, "add the phase times to the JSON (which then differs from run to run)")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.BoolVar(&f.quiet, "quiet", false, "print neither progress nor the summary")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	f.adaptive.define(fs)
	if engine != nil {
		engine.Flags(fs)
	}
	return fs
}

// lossOptions reads --loss and, for a binary classifier, --set-score,
// --flag-above and --flag-below.
func (f *flags) lossOptions() (hvp.Loss, *classify.Options, error) {
	cls := &classify.Options{FlagAbove: f.flagAbove.v, FlagBelow: f.flagBelow.v}
	var err error
	if cls.Score, err = classify.ParseScore(f.setScore); err != nil {
		return 0, nil, usagef("--set-score %q: choose lac, aps or raps", f.setScore)
	}
	if f.classWeights != "" {
		for _, s := range strings.Split(f.classWeights, ",") {
			w, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(w > 0) || math.IsInf(w, 0) {
				return 0, nil, usagef("--class-weights %q: give two positive weights, w0,w1", f.classWeights)
			}
			cls.ClassWeights = append(cls.ClassWeights, w)
		}
		if len(cls.ClassWeights) != 2 && !isSoftmax(f.loss) {
			return 0, nil, usagef("--class-weights %q: give two positive weights, w0,w1", f.classWeights)
		}
	}
	for _, v := range []*float64{cls.FlagAbove, cls.FlagBelow} {
		if v != nil && !(*v > 0 && *v < 1) {
			return 0, nil, usagef("--flag-above and --flag-below take a probability between 0 and 1, not %g", *v)
		}
	}
	if f.labelSmoothing != 0 && !isSoftmax(f.loss) {
		return 0, nil, usagef("--label-smoothing is for --loss softmax-ce")
	}
	switch strings.ToLower(f.loss) {
	case "squared-error", "squared_error", "squared", "mse":
		if cls.FlagAbove != nil || cls.FlagBelow != nil || cls.ClassWeights != nil || !strings.EqualFold(f.setScore, "lac") {
			return 0, nil, usagef("--set-score, --class-weights, --flag-above and --flag-below are for classifiers: give --loss bce or bce-logits")
		}
		return hvp.SquaredError, nil, nil
	case "cross-entropy", "cross_entropy", "binary-cross-entropy", "bce":
		return hvp.BinaryCrossEntropySigmoid, cls, nil
	case "bce-logits", "bce_logits", "bce-with-logits":
		cls.Logits = true
		return hvp.BinaryCrossEntropySigmoid, cls, nil
	case "softmax-ce", "softmax_ce", "cross-entropy-logits":
		if cls.FlagAbove != nil || cls.FlagBelow != nil {
			return 0, nil, usagef("--flag-above and --flag-below flag the probability of class 1 of a binary classifier: give --loss bce or bce-logits")
		}
		if !(f.labelSmoothing >= 0 && f.labelSmoothing < 1) {
			return 0, nil, usagef("--label-smoothing %g: give a number in [0, 1)", f.labelSmoothing)
		}
		cls.Softmax, cls.Smoothing = true, f.labelSmoothing
		return hvp.SoftmaxCrossEntropy, cls, nil
	}
	return 0, nil, usagef("--loss %q: choose squared-error, bce (cross-entropy), bce-logits or softmax-ce", f.loss)
}

// isSoftmax reports whether --loss names softmax cross-entropy.
func isSoftmax(loss string) bool {
	switch strings.ToLower(loss) {
	case "softmax-ce", "softmax_ce", "cross-entropy-logits":
		return true
	}
	return false
}

// optFloat is a float flag that may be left unset.
type optFloat struct{ v *float64 }

func (o *optFloat) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatFloat(*o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.New("not a finite number")
	}
	o.v = &v
	return nil
}

func (o *optFloat) Type() string { return "float" }

// output is one report to write.
type output struct {
	path   string
	format reports.Format
	flag   string // --out or --json
}

// plan is a checked command line: what to read, how to audit, what to
// write.
type plan struct {
	f       *flags
	layout  onnx.Layout // Unknown: detect
	output  string      // the forecast output's name ("" the first)
	read    blocks.Options
	opt     audit.Options
	outputs []output
	command string
	fans    reports.FanSelection
	fit     bool // audit fit: --calibration without --test
}

// auditCmd runs an audit, with the engine's executor when it gives one.
func auditCmd(args []string, stdout, stderr io.Writer, engine Engine) error {
	p, err := parseWith(args, false, engine)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage())
		return err
	}
	if err != nil {
		return err
	}
	if p.f.version {
		fmt.Fprintln(stdout, versionString())
		return nil
	}
	if err := p.checkFiles(); err != nil {
		return err
	}

	g, pruned, err := p.loadModel()
	if err != nil {
		return err
	}
	if err := p.loadTrainInit(g); err != nil {
		return err
	}
	layout := p.opt.Layout

	train, err := blocks.ReadFile(p.f.data, &p.read)
	if err != nil {
		return err
	}
	var test *blocks.Dataset
	if p.f.test != "" {
		ro := p.read
		ro.Features, ro.Targets, ro.OptionalTargets = train.Features, train.Targets, true
		if test, err = blocks.ReadFile(p.f.test, &ro); err != nil {
			return err
		}
	}
	if err := p.readCalibration(train); err != nil {
		return err
	}
	g, pruned, chosen, err := p.chooseOutput(g, pruned, train)
	if err != nil {
		return err
	}
	if err := checkFanIDs(p.fans, train, test); err != nil {
		return err
	}

	// With --window the model reads windows, never a series whole.
	if p.opt.Window == 0 {
		if err := checkSequenceMemory(g, layout, train, test, p.opt.Calibration); err != nil {
			return err
		}
	}
	if n := blockNotice(train, p.opt.Blocks, p.opt.BlockLength); n != "" && !p.f.quiet {
		fmt.Fprintln(stderr, terminalSafe("audit: note: "+n))
	}
	var windowed string
	if p.opt.Window == 0 {
		if windowed = windowedNotice(train, p.f); windowed != "" {
			fmt.Fprintln(stderr, terminalSafe("audit: warning: "+windowed))
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first Ctrl-C, a second one kills at once.
	go func() { <-ctx.Done(); stop() }()
	var prog *progress
	if !p.f.quiet {
		prog = newProgress(stderr)
		p.opt.Progress = prog.report
	}
	if engine != nil {
		e, release, err := engine.Executor(ctx, p.engineAudit())
		if err != nil {
			return err
		}
		defer release()
		p.opt.Executor = e
	}
	res, err := audit.Run(ctx, g, train, test, &p.opt)
	if prog != nil {
		prog.done()
	}
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		if fixedShapeWarning(g, layout) != "" && !errors.Is(err, modelio.ErrFixedLength) && !errors.As(err, new(*audit.OptionError)) &&
			!errors.As(err, new(*blocks.DataError)) {
			return &contextError{fmt.Sprintf("%s was exported with a fixed batch size or number of steps (audit inspect --model %s shows how to export it with dynamic axes)", p.f.model, p.f.model), err}
		}
		// A node's error names the node, not the model, which the
		// audit's errors do not name either: the command names it.
		if ne := (*graph.NodeError)(nil); errors.As(err, &ne) {
			return &contextError{p.f.model, err}
		}
		return err
	}
	if windowed != "" {
		res.Setting.Notes = append(res.Setting.Notes, "Warning: "+windowed)
	}

	ro := &reports.Options{
		Columns: &reports.Columns{ID: train.IDCol, Time: train.TimeCol, Target: strings.Join(train.Targets, ","),
			Features: train.Features, Shift: train.Shift},
		Command:     p.command,
		Timings:     p.f.timings,
		ParamRoles:  map[string]string{},
		FanCharts:   p.fans,
		ToolVersion: versionString(),
	}
	for _, prm := range g.Params() {
		ro.ParamRoles[prm.Name] = onnx.ParamRole(g, prm.Name)
	}
	var written []string
	for _, o := range p.outputs {
		w, err := reports.WriteFile(o.path, o.format, res, ro)
		if err != nil {
			return err
		}
		written = append(written, w[0])
		if len(w) > 1 {
			written[len(written)-1] += fmt.Sprintf(" (charts in %s)", filepath.Dir(w[1]))
		}
	}
	if p.f.quiet {
		return nil
	}
	if chosen != "" {
		// The output chosen among several comes first: every figure
		// below is about it.
		fmt.Fprintln(stdout, terminalSafe(chosen))
	}
	if err := reports.WriteSummary(stdout, res); err != nil {
		return err
	}
	for _, a := range res.Model.Assumed {
		fmt.Fprintln(stdout, "note: "+a)
	}
	fmt.Fprintln(stdout, inputsLine(res, train, p.f))
	if l := outputLine(res, pruned); l != "" && chosen == "" {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintf(stdout, "Solver: %s.\n", reports.SolverText(res.Setting, res.Model.Params))
	if w := res.Setting.Windows; w != "" {
		fmt.Fprintln(stdout, "Windows: "+w)
	}
	switch {
	case len(written) > 0:
		fmt.Fprintf(stdout, "Report written to %s.\n", strings.Join(written, ", "))
	default:
		fmt.Fprintln(stdout, "No report written: add --out report.html (or .md, .json, .csv).")
	}
	return nil
}

// parse reads the command line (and the config file it names) and checks
// every flag and combination of flags, before any file is read.
func parse(args []string) (*plan, error) { return parseAs(args, false) }

// parseAs is parse for audit (fit false) or audit fit (fit true: a
// calibration set without test data).
func parseAs(args []string, fit bool) (*plan, error) { return parseWith(args, fit, nil) }

// parseWith is parseAs with the flags of engine (when not nil) added.
func parseWith(args []string, fit bool, engine Engine) (*plan, error) {
	f := &flags{}
	fs := newFlagSet(f, engine)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, errHelp
		}
		if hint := singleDash(fs, err); hint != "" {
			return nil, usagef("%s (run 'audit --help')", hint)
		}
		return nil, usagef("%s (run 'audit --help')", tidyFlagError(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q: every input is given by a flag, such as --data %s (run 'audit --help')", fs.Arg(0), fs.Arg(0))
	}
	if f.config != "" {
		if err := applyConfig(fs, f.config); err != nil {
			return nil, err
		}
	}
	p := &plan{f: f, command: commandLine(args), fit: fit}
	if f.version {
		return p, nil
	}
	if err := p.check(fs); err != nil {
		return nil, err
	}
	return p, nil
}

// check validates the flags and fills in the plan.
func (p *plan) check(fs *pflag.FlagSet) error {
	f := p.f
	switch {
	case f.model == "" && f.data == "":
		return usagef("--model and --data are required: audit --model m.onnx --data train.csv --test test.csv --out report.html (run 'audit --help')")
	case f.model == "":
		return usagef("--model is required: the ONNX model to audit")
	case f.data == "":
		return usagef("--data is required: the training data the model was fitted to (CSV)")
	}

	switch strings.ToLower(f.layout) {
	case "auto", "":
		p.layout = onnx.Unknown
	case "batch-first", "batch_first", "batchfirst":
		p.layout = onnx.BatchFirst
	case "time-first", "time_first", "timefirst":
		p.layout = onnx.TimeFirst
	default:
		return usagef("--layout %q: choose auto, batch-first or time-first", f.layout)
	}

	if !(f.alpha > 0 && f.alpha < 0.5) {
		return usagef("--alpha %g: must be between 0 and 0.5 (0.1 gives 90%% intervals)", f.alpha)
	}
	kind, err := blocks.ParseKind(f.blocks)
	if err != nil {
		return usagef("--blocks %q: choose sequence, interval or nested", f.blocks)
	}
	switch {
	case f.window < 0 || fs.Changed("window") && f.window == 0:
		return usagef("--window %d: the number of rows the model reads per window must be at least 1", f.window)
	case f.window > 0 && fs.Changed("blocks"):
		return usagef("--window %d uses window blocks: drop --blocks (--block-length sets their length)", f.window)
	case f.window > 0 && fs.Changed("block-length") && f.blockLength < 1:
		return usagef("--block-length %d: must be at least 1", f.blockLength)
	case f.window > 0:
	case fs.Changed("block-length") && kind == blocks.Sequences:
		return usagef("--block-length applies to interval and nested blocks: add --blocks interval (or nested), or drop --block-length")
	case kind != blocks.Sequences && !fs.Changed("block-length"):
		return usagef("--blocks %s needs --block-length K, the number of steps per block", kind)
	case kind != blocks.Sequences && f.blockLength < 1:
		return usagef("--block-length %d: must be at least 1", f.blockLength)
	}

	pool, err := audit.ParsePooling(strings.ToLower(f.pool))
	if err != nil {
		return usagef("--pool %q: choose auto, position or rows", f.pool)
	}

	solver := audit.Solver(strings.ToLower(f.solver))
	if !slices.Contains(audit.Solvers(), solver) {
		return usagef("--solver %q: choose %s", f.solver, solverList())
	}
	if f.rank < 0 {
		return usagef("--rank %d: must be at least 1 (0: the default)", f.rank)
	}
	var curv hvp.Curvature
	switch strings.ToLower(f.curvature) {
	case "hessian":
		curv = hvp.Hessian
	case "gauss-newton", "gauss_newton", "gaussnewton", "gn":
		curv = hvp.GaussNewton
	default:
		return usagef("--curvature %q: choose hessian or gauss-newton", f.curvature)
	}
	if fs.Changed("damping") && (!(f.damping > 0) || math.IsInf(f.damping, 0)) {
		return usagef("--damping %g: must be positive (it is relative to the mean eigenvalue; default %g to %g)", f.damping, hvp.DefaultStationaryGaussNewtonDamping, hvp.DefaultDampingFor(curv, math.Inf(1)))
	}
	estimator := audit.Estimator(strings.ToLower(f.estimator))
	switch estimator {
	case audit.Newton, audit.Infinitesimal:
	default:
		return usagef("--estimator %q: choose newton or infinitesimal", f.estimator)
	}
	if f.newtonSteps < 0 {
		return usagef("--newton-steps %d: must be 1 or more (0: the default)", f.newtonSteps)
	}
	loss, cls, err := f.lossOptions()
	if err != nil {
		return err
	}
	if f.calibrationPool < 0 {
		return usagef("--calibration-pool %d: give the number of calibration values a forecast's quantile needs, 0 for the default", f.calibrationPool)
	}
	if !(f.ridge >= 0) || math.IsInf(f.ridge, 0) {
		return usagef("--ridge %g: must be zero or positive", f.ridge)
	}
	if f.low.v != nil && f.high.v != nil && *f.low.v >= *f.high.v {
		return usagef("--low %g must be below --high %g", *f.low.v, *f.high.v)
	}
	if f.retrain < -1 {
		return usagef("--retrain %d: give a number of blocks, or -1 for all", f.retrain)
	}
	if f.retrainBudget < 0 {
		return usagef("--retrain-budget %v: give a duration such as 2m, or 0 for none", f.retrainBudget)
	}
	if f.retrainMaxIter < 0 {
		return usagef("--retrain-max-iter %d: give a number of iterations, or 0 for the default", f.retrainMaxIter)
	}
	if f.calibration != "" && f.test == "" && !p.fit {
		return usagef("--calibration needs --test: conformal intervals are for new sequences, and without --test the audit evaluates the training sequences, which their guarantee does not cover")
	}
	if f.idCol == "" || f.timeCol == "" || f.target == "" {
		return usagef("--id-col, --time-col and --target cannot be empty")
	}

	// Outputs.
	seen := map[string]string{}
	addOut := func(path string, format reports.Format, flag string) error {
		if path == "" {
			return usagef("%s needs a file name", flag)
		}
		key := filepath.Clean(path)
		if prev, dup := seen[key]; dup {
			return usagef("%s %s: the file is already written by %s", flag, path, prev)
		}
		seen[key] = flag
		p.outputs = append(p.outputs, output{path, format, flag})
		return nil
	}
	for _, o := range f.out {
		format, err := reports.FormatOf(o)
		if err != nil {
			return usagef("--out %s: the extension must be .html, .md, .json or .csv", o)
		}
		if err := addOut(o, format, "--out"); err != nil {
			return err
		}
	}
	if f.json != "" || fs.Changed("json") {
		if err := addOut(f.json, reports.JSON, "--json"); err != nil {
			return err
		}
	}

	fans, err := reports.ParseFanCharts(f.fanCharts)
	if err != nil {
		return usagef("--fan-charts %s: %v", f.fanCharts, err)
	}
	p.fans = fans

	inputs := map[string][]string{}
	for _, in := range f.inputs {
		name, cols, ok := strings.Cut(in, "=")
		name = strings.TrimSpace(name)
		var list []string
		for _, c := range strings.Split(cols, ",") {
			if c = strings.TrimSpace(c); c != "" {
				list = append(list, c)
			}
		}
		switch {
		case !ok || name == "" || len(list) == 0:
			return usagef("--input %q: give a model input and its columns, such as --input x_cat=store,dow", in)
		case inputs[name] != nil:
			return usagef("--input %s is given twice", name)
		}
		inputs[name] = list
	}
	name, col, err := modelio.ParseOutput(f.output)
	if err != nil || (f.output != "" && name == "") {
		return usagef("--output %q: give the forecast output's name, or name:column such as y:0", f.output)
	}
	p.output = name
	if f.horizons < 0 {
		return usagef("--horizons %d: give the number of horizons of the forecast output's last axis", f.horizons)
	}
	if f.horizons > 1 && col >= 0 {
		return usagef("--horizons %d with --output %s: one column holds one forecast per row; drop the column or --horizons", f.horizons, f.output)
	}

	p.read = blocks.Options{IDCol: f.idCol, TimeCol: f.timeCol, Targets: []string{f.target}, Features: f.features, Shift: f.shift}
	p.opt = audit.Options{
		Alpha: f.alpha, Blocks: kind, BlockLength: f.blockLength, Window: f.window, Solver: solver, Rank: f.rank, Estimator: estimator, NewtonSteps: f.newtonSteps, Curvature: curv,
		Damping: f.damping, Loss: loss, Ridge: f.ridge, Params: f.params, Low: f.low.v, High: f.high.v, Retrain: f.retrain,
		RetrainBudget: f.retrainBudget, RetrainMaxIter: f.retrainMaxIter,
		Seed: f.seed, ModelPath: f.model, Inputs: inputs, Output: f.output, Horizons: f.horizons, Align: f.align,
		DampingSensitivity: f.dampingSensitivity, Pooling: pool, Warmup: f.poolWarmup, Restart: f.restart,
		RetrainStart: audit.RetrainStart(strings.ToLower(f.retrainStart)), Classify: cls, CalibrationPool: f.calibrationPool,
	}
	if f.memory != "" {
		if p.opt.Memory, err = membudget.Parse(f.memory); err != nil {
			return usagef("--memory: %v", err)
		}
	}
	if p.opt.TargetScale, err = parseTargetScale(f.targetScale); err != nil {
		return err
	}
	if err := p.trainBudget(); err != nil {
		return err
	}
	if p.opt.Adaptive, err = f.adaptive.options(fs, f.test != "" || p.fit); err != nil {
		return err
	}
	return nil
}

// checkFiles checks that the input files can be read and the output
// directories exist, before any heavy work.
func (p *plan) checkFiles() error {
	for _, in := range []struct{ flag, path string }{{"--model", p.f.model}, {"--data", p.f.data}, {"--test", p.f.test}, {"--calibration", p.f.calibration}} {
		if in.path == "" {
			continue
		}
		st, err := os.Stat(in.path)
		switch {
		case err != nil:
			return fmt.Errorf("%s %s: %w", in.flag, in.path, unwrapPath(err))
		case st.IsDir():
			return fmt.Errorf("%s %s: is a directory, not a file", in.flag, in.path)
		}
		// Non-blocking: opening a named pipe would wait for its writer.
		fh, err := os.OpenFile(in.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("%s %s: %w", in.flag, in.path, unwrapPath(err))
		}
		fh.Close()
	}
	for _, o := range p.outputs {
		dir := filepath.Dir(o.path)
		st, err := os.Stat(dir)
		switch {
		case err != nil:
			return fmt.Errorf("cannot write %s: directory %s: %w", o.path, dir, unwrapPath(err))
		case !st.IsDir():
			return fmt.Errorf("cannot write %s: %s is not a directory", o.path, dir)
		}
		if st, err := os.Stat(o.path); err == nil && st.IsDir() {
			return fmt.Errorf("cannot write %s: it is a directory", o.path)
		}
		if err := checkWritable(o); err != nil {
			return err
		}
	}
	var outs []namedFile
	for _, o := range p.outputs {
		outs = append(outs, namedFile{o.flag, o.path})
	}
	return checkIdentity(p.inputFiles(), outs)
}

// settleLayout sets p.opt.Layout: the --layout given, or the one the
// model's graph says (audit and audit fit).
func (p *plan) settleLayout(g *graph.Graph) error {
	p.opt.Layout = p.layout
	if p.layout != onnx.Unknown {
		return nil
	}
	layout, why := onnx.DetectLayout(g)
	if layout == onnx.Unknown {
		return usagef("cannot tell whether the input of %s is batch-first or time-first (%s): give --layout batch-first or --layout time-first (see audit inspect)", p.f.model, why)
	}
	p.opt.Layout = layout
	return nil
}

// readCalibration reads --calibration, when given, into p.opt.Calibration
// with the training data's feature and target columns.
func (p *plan) readCalibration(train *blocks.Dataset) error {
	if p.f.calibration == "" {
		return nil
	}
	ro := p.read
	ro.Features, ro.Targets = train.Features, train.Targets
	var err error
	p.opt.Calibration, err = blocks.ReadFile(p.f.calibration, &ro)
	return err
}

// inputFiles are the files the command line reads, which no output may be.
func (p *plan) inputFiles() []namedFile {
	return []namedFile{{"--model", p.f.model}, {"--data", p.f.data}, {"--test", p.f.test}, {"--calibration", p.f.calibration}, {"--config", p.f.config}}
}

// unwrapPath drops the operation and path of a *fs.PathError, which the
// message already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// commandLine renders args as a shell command, for the report.
func commandLine(args []string) string {
	parts := []string{"audit"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// tidyFlagError rewrites pflag's errors in the command's words, from
// their fields: "--alpha "abc": not a number" for a bad value, and a
// suggestion for a mistyped flag.
func tidyFlagError(fs *pflag.FlagSet, err error) string {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		why := errors.Unwrap(iv).Error()
		if ne := (*strconv.NumError)(nil); errors.As(iv, &ne) {
			why = "not a number"
			if strings.Contains(iv.GetFlag().Value.Type(), "int") {
				why = "not a whole number"
			}
		}
		return fmt.Sprintf("--%s %q: %s", iv.GetFlag().Name, iv.GetValue(), why)
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) && ne.GetSpecifiedShortnames() == "" {
		if s := closest(fs, ne.GetSpecifiedName()); s != "" {
			return fmt.Sprintf("unknown flag: --%s: did you mean --%s?", ne.GetSpecifiedName(), s)
		}
	}
	return err.Error()
}

// singleDash returns a hint for a long flag written with one dash, which
// pflag reads as a row of one-letter flags and reports as an unknown
// shorthand flag ('m' in -model): "-model: flags take two dashes: did you
// mean --model?". It returns "" for any other error.
func singleDash(fs *pflag.FlagSet, err error) string {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return ""
	}
	arg := ne.GetSpecifiedShortnames()
	if arg == "" || arg[0] == '-' {
		return ""
	}
	name, val, hasVal := strings.Cut(arg, "=")
	if fs.Lookup(name) == nil {
		if name = closest(fs, name); name == "" {
			return ""
		}
	}
	if hasVal {
		name += "=" + val
	}
	return fmt.Sprintf("-%s: flags take two dashes: did you mean --%s?", arg, name)
}

// closest returns the flag name within edit distance 2 of name, if any.
func closest(fs *pflag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// solverList words the names of audit.Solvers for the flag's help and its
// message: "auto, exact, dual, lowrank, cg or lissa".
func solverList() string {
	var names []string
	for _, n := range audit.Solvers() {
		names = append(names, string(n))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// parseTargetScale reads --target-scale MEAN,STD (nil for "").
func parseTargetScale(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	v := make([]float64, len(parts))
	for i, part := range parts {
		var err error
		if v[i], err = strconv.ParseFloat(strings.TrimSpace(part), 64); err != nil {
			return nil, usagef("--target-scale %q: give the mean and the standard deviation the target was scaled with, such as 57.3,41.2", s)
		}
	}
	if modelio.CheckTargetScale(v) != nil {
		return nil, usagef("--target-scale %q: give the mean and a positive standard deviation, finite, such as 57.3,41.2 (the model was trained on (y - mean) / std)", s)
	}
	return v, nil
}

package cli

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestVersion(t *testing.T) {
	code, out, errs := runCmd("--version")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if want := versionString() + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !regexp.MustCompile(`^rnnaudit \S.* \(go[0-9.]+.*\)\n$`).MatchString(out) {
		t.Errorf("version line %q is not \"rnnaudit VERSION (goX.Y)\"", out)
	}
	// --version needs no other flag, and a release build's version wins.
	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	if code, out, _ := runCmd("--version", "--alpha", "0.2"); code != 0 || out != "rnnaudit v9.8.7 ("+runtime.Version()+")\n" {
		t.Errorf("release build: exit %d, %q", code, out)
	}
}

func TestSingleDashHint(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", "m.onnx"}, "audit: -model: flags take two dashes: did you mean --model? (run 'audit --help')\n"},
		{[]string{"--model", "m.onnx", "-alpah=0.2"}, "audit: -alpah=0.2: flags take two dashes: did you mean --alpha=0.2? (run 'audit --help')\n"},
		{[]string{"inspect", "-model", "m.onnx"}, "audit: inspect: -model: flags take two dashes: did you mean --model?\n"},
		// A one-letter flag that does not exist gets pflag's message.
		{[]string{"-q"}, "audit: unknown shorthand flag: 'q' in -q (run 'audit --help')\n"},
	} {
		code, _, stderr := runCmd(c.args...)
		if code != 2 || stderr != c.want {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// A plain value of features in a config file is split at commas like the
// flag; an item of a list is one column name.
func TestConfigFeaturesSplit(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"features: a,b", "[a b]"},
		{"features: [a, b]", "[a b]"},
		{"features: [\"a,b\", c]", "[a,b c]"},
		{"features: a", "[a]"},
	} {
		path := filepath.Join(t.TempDir(), "audit.yaml")
		if err := os.WriteFile(path, []byte(c.yaml+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f := &flags{}
		fs := newFlagSet(f, nil)
		if err := applyConfig(fs, path); err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		if got := "[" + strings.Join(f.features, " ") + "]"; got != c.want {
			t.Errorf("%s: features %s, want %s", c.yaml, got, c.want)
		}
	}
}

// helpExample is the first example of --help as one argument list.
func helpExample(t *testing.T) []string {
	t.Helper()
	_, after, ok := strings.Cut(usage(), "Examples:\n")
	if !ok {
		t.Fatal("--help has no examples")
	}
	var cmd strings.Builder
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "audit ") || cmd.Len() > 0 {
			cmd.WriteString(strings.TrimSuffix(line, "\\") + " ")
			if !strings.HasSuffix(line, "\\") {
				break
			}
		}
	}
	return strings.Fields(cmd.String())[1:]
}

// The first example of --help runs as written (from the repository's
// root) and gives an audit without warnings.
func TestHelpFirstExample(t *testing.T) {
	args := helpExample(t)
	dir := t.TempDir()
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "examples/"):
			args[i] = filepath.Join("..", "..", a)
		case i > 0 && args[i-1] == "--out":
			args[i] = filepath.Join(dir, a)
		}
	}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("%q: exit %d: %s", args, code, errs)
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("the first example of --help gives warnings:\n%s", out)
	}
	// The report names the exporter's parameter tensors with their role.
	page := readFile(t, filepath.Join(dir, "report.html"))
	if want := "onnx::RNN_40 (W of RNN node &#34;/rnn/RNN&#34;)"; !strings.Contains(page, want) {
		t.Errorf("the report lacks %q", want)
	}
}

// The CSV export holds every interval of the JSON result, to the bit.
func TestCSVExport(t *testing.T) {
	dir := t.TempDir()
	csvPath, js := filepath.Join(dir, "intervals.csv"), filepath.Join(dir, "r.json")
	code, _, errs := runCmd("--model", exModel, "--data", exTrain, "--test", exTest, "--ridge", "10",
		"--quiet", "--out", csvPath, "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	fh, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// The first columns; the calibrated kinds' and the recommendation's
	// follow (reports.CSVHeader, checked in package reports).
	header := "id,t,horizon,prediction,lower,upper,target,naive_lower,naive_upper"
	if got := strings.Join(rows[0][:9], ","); got != header {
		t.Fatalf("header %s, want %s", got, header)
	}
	// The JSON as written (null for an unbounded limit); yaml.v3 reads
	// JSON, keeping the numbers exact.
	var doc struct {
		Sequences []struct {
			ID    string
			Steps []map[string]any
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	num := func(v any) float64 {
		switch x := v.(type) {
		case int:
			return float64(x)
		case float64:
			return x
		}
		return math.NaN()
	}
	i := 1
	for _, s := range doc.Sequences {
		for _, st := range s.Steps {
			if i >= len(rows) {
				t.Fatalf("the CSV has %d intervals, the JSON more", len(rows)-1)
			}
			r := rows[i]
			i++
			if r[0] != s.ID {
				t.Fatalf("row %d: id %s, JSON %s", i, r[0], s.ID)
			}
			for c, key := range []string{"t", "horizon", "prediction", "lower", "upper", "target", "naive_lower", "naive_upper"} {
				v, err := strconv.ParseFloat(r[c+1], 64)
				if err != nil {
					t.Fatalf("row %d column %s: %v", i, key, err)
				}
				want := num(st[key])
				if st[key] == nil && (key == "lower" || key == "naive_lower") {
					want = math.Inf(-1) // null in the JSON: unbounded
				} else if st[key] == nil && (key == "upper" || key == "naive_upper") {
					want = math.Inf(1)
				}
				if v != want {
					t.Fatalf("row %d column %s: %v in the CSV, %v in the JSON", i, key, v, want)
				}
			}
		}
	}
	if i != len(rows) || i != 2001 {
		t.Errorf("the CSV has %d intervals, the JSON %d; want 2000", len(rows)-1, i-1)
	}
}

// Two audits with the same inputs and seed write the same JSON bytes; with
// --timings the JSON also holds the phase times.
func TestJSONByteIdentical(t *testing.T) {
	dir := t.TempDir()
	var docs [][]byte
	for i, extra := range [][]string{nil, nil, {"--timings"}} {
		js := filepath.Join(dir, strconv.Itoa(i)+".json")
		args := append([]string{"--model", exModel, "--data", exTrain, "--test", exTest, "--ridge", "10",
			"--blocks", "interval", "--block-length", "3", "--low", "2", "--seed", "7", "--quiet", "--json", js}, extra...)
		if code, _, errs := runCmd(args...); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Errorf("two runs wrote different JSON (first difference at byte %d)", firstDiff(docs[0], docs[1]))
	}
	var doc struct {
		Timings *struct {
			Phases []struct {
				Name    string
				Seconds float64
				CPU     float64 `yaml:"cpu_seconds"`
			}
			Total float64 `yaml:"total_seconds"`
		}
	}
	if err := yaml.Unmarshal(docs[2], &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Timings == nil || len(doc.Timings.Phases) < 4 || doc.Timings.Phases[0].Name != "prepare" || !(doc.Timings.Total > 0) {
		t.Errorf("--timings: timings %+v", doc.Timings)
	} else if cpu := 0.0; runtime.GOOS == "linux" {
		// The phases' CPU seconds are the process's: an audit takes some.
		for _, p := range doc.Timings.Phases {
			cpu += p.CPU
		}
		if !(cpu > 0) {
			t.Errorf("--timings: the phases' CPU seconds sum to %g", cpu)
		}
	}
	if bytes.Contains(docs[0], []byte(`"timings"`)) || bytes.Contains(docs[0], []byte(`"seconds"`)) {
		t.Error("the JSON without --timings holds times")
	}
}

func firstDiff(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// The summary names the feature columns in model order and how they were
// chosen; with two columns swapped, the model fits its training data far
// better in the file's order, and the summary says so once, naming the
// --features that fit.
func TestFeaturesSummary(t *testing.T) {
	const dir = "../../examples/chickweight/"
	base := []string{"--model", dir + "model.onnx", "--data", dir + "train.csv", "--test", dir + "test.csv", "--ridge", "3000"}
	code, out, errs := runCmd(base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "Features, in the order the model takes them: day, weight, diet1, diet2, diet3, diet4 (every column but id, t and y, in file order; choose others or another order with --features).\n"; !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "fits its training data far better") {
		t.Errorf("the right columns get a warning:\n%s", out)
	}
	code, out, errs = runCmd(append(base, "--features", "weight,day,diet1,diet2,diet3,diet4")...)
	if code != 0 {
		t.Fatalf("swapped: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Features, in the order the model takes them: weight, day, diet1, diet2, diet3, diet4 (as given by --features).\n",
		"warning: The model fits its training data far better with --features day,weight,diet1,diet2,diet3,diet4 --shift 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("swapped columns: stdout lacks %q:\n%s", want, out)
		}
	}
}

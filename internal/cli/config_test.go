package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configDir copies the example into a directory with a config file, so
// that the config can name the files relative to itself.
func configDir(t *testing.T, config string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{exModel, exTrain, exTest} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(dir, "audit.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func TestConfig(t *testing.T) {
	dir, cfg := configDir(t, `# audit settings
model: model_small.onnx
data: train_small.csv
test: test_small.csv
features: [x]
alpha: 0.2
low: 0
high: ~
blocks: interval
block-length: 5
out:
  - from-config.json
quiet: true
`)
	// The command line wins over the file: alpha and the outputs.
	js := filepath.Join(t.TempDir(), "cli.json")
	code, out, errs := runCmd("--config", cfg, "--alpha", "0.1", "--out", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out != "" {
		t.Errorf("quiet from the config, yet stdout %q", out)
	}
	doc := readJSON(t, js)
	st := doc["settings"].(map[string]any)
	if st["alpha"] != 0.1 {
		t.Errorf("alpha %v: the command line must win", st["alpha"])
	}
	if st["low"] != 0.0 || st["high"] != nil || st["blocks"] != "interval" || st["block_length"] != 5.0 {
		t.Errorf("settings from the config not applied: %v", st)
	}
	if st["train_file"] != filepath.Join(dir, "train_small.csv") {
		t.Errorf("train file %v: paths are relative to the config file", st["train_file"])
	}
	if _, err := os.Stat(filepath.Join(dir, "from-config.json")); err == nil {
		t.Error("the config's --out was written although the command line gave --out")
	}

	// Without command-line outputs, the config's are used.
	if code, _, errs := runCmd("--config", cfg); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-config.json")); err != nil {
		t.Errorf("the config's out: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config string
		code   int
		want   string
	}{
		{"model: model_small.onnx\ndata: train_small.csv\nalpah: 0.1\n", 2, `audit.yaml:3: unknown key "alpah"`},
		{"model: model_small.onnx\nid_col: patient\n", 2, `unknown key "id_col": did you mean "id-col"?`},
		{"model: model_small.onnx\ndata: train_small.csv\nalpha: high\n", 2, `audit.yaml:3: alpha: invalid value "high"`},
		{"model: model_small.onnx\ndata: [a.csv, b.csv]\n", 2, "audit.yaml:2: data takes one value, not a list"},
		{"model: model_small.onnx\nlow: {x: 1}\n", 2, "low must be a value or a list of values, not a mapping"},
		{"- model\n- data\n", 2, "must be a mapping of flag names"},
		{"m: &m {a: 1}\n", 2, `unknown key "m"`},
		{"model: model_small.onnx\nlow: &m {x: 1}\nhigh: *m\n", 2, "audit.yaml:2: low must be a value or a list of values, not a mapping"},
		{"model: model_small.onnx\nfeatures: [&m {x: 1}]\ntarget: *m\n", 2, "audit.yaml:2: the items of features must be plain values, not a mapping"},
		{"model: model_small.onnx\nfeatures: [x, *m]\n", 2, "audit.yaml"}, // an unknown anchor: yaml's own message
		// An alias stands for the value it names: the data path, then a
		// file that is not there.
		{"model: &m model_small.onnx\ndata: *m\ntest: &t missing.csv\ncalibration: *t\n", 1, "missing.csv: no such file"},
		{"model: [unclosed\n", 2, "audit.yaml"},
		{"model: model_small.onnx\ndata: train_small.csv\nalpha: 0.1\nalpha: 0.2\n", 2, `key "alpha" is given twice`},
		{"model: model_small.onnx\nconfig: other.yaml\n", 2, `unknown key "config"`},
		{"model: model_small.onnx\ndata: train_small.csv\nblocks: interval\n", 2, "--blocks interval needs --block-length"},
		{"model: model_small.onnx\ndata: missing.csv\n", 1, "missing.csv: no such file"},
	} {
		_, cfg := configDir(t, tc.config)
		code, _, errs := runCmd("--config", cfg)
		if code != tc.code {
			t.Errorf("config %q: exit %d, want %d (%s)", tc.config, code, tc.code, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("config %q: stderr %q lacks %q", tc.config, errs, tc.want)
		}
		oneMessage(t, []string{"--config", tc.config}, errs, 1)
	}
	// An alias is named as written, with what it stands for (the
	// anchored mapping is skipped: --low is on the command line).
	_, cfg := configDir(t, "model: model_small.onnx\nlow: &m {x: 1}\nhigh: *m\n")
	if code, _, errs := runCmd("--low", "0", "--config", cfg); code != 2 || !strings.Contains(errs, "audit.yaml:3: high must be a value or a list of values, not an alias (*m) of a mapping") {
		t.Errorf("alias of a mapping: exit %d, %q", code, errs)
	}
	if code, _, errs := runCmd("--config", filepath.Join(t.TempDir(), "none.yaml")); code != 1 || !strings.Contains(errs, "none.yaml: no such file") {
		t.Errorf("missing config: exit %d, %q", code, errs)
	}
}

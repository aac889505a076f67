package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFitPredictModelIO checks that audit fit loads the model as audit
// does (--output, --input, --features, --horizons) and that predict
// re-applies the selection the artifact records: on the modelio models
// with a second integer input and with a two-valued output, predict's CSV
// equals a full audit's of the same test file, byte for byte. It checks
// predict's refusals, one clear error each: another format version, data
// without a feature column of the fit, and another model.
func TestFitPredictModelIO(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"embed_input", []string{"--input", "x_cat=store,dow", "--features", "x2,x1"}},
		{"gauss_cat", []string{"--output", "y:0"}},
		{"gauss_two", []string{"--output", "y"}},
		{"linear_horizons", []string{"--horizons", "3"}},
	} {
		model, train, test := filepath.Join(modelioDir, c.name+".onnx"), filepath.Join(modelioDir, c.name+"_train.csv"), filepath.Join(modelioDir, c.name+"_test.csv")
		common := append([]string{"--model", model, "--data", train, "--quiet", "--ridge", "1"}, c.flags...)
		art := filepath.Join(dir, c.name+".rna")
		if code, _, errs := runCmd(append([]string{"fit", "--save", art}, common...)...); code != 0 {
			t.Fatalf("%s: fit: exit %d: %s", c.name, code, errs)
		}
		pcsv, rcsv := filepath.Join(dir, c.name+"_p.csv"), filepath.Join(dir, c.name+"_r.csv")
		if code, _, errs := runCmd("predict", "--load", art, "--data", test, "--out", pcsv, "--quiet"); code != 0 {
			t.Fatalf("%s: predict: exit %d: %s", c.name, code, errs)
		}
		if code, _, errs := runCmd(append([]string{"--test", test, "--out", rcsv, "--damping-sensitivity=false"}, common...)...); code != 0 {
			t.Fatalf("%s: audit: exit %d: %s", c.name, code, errs)
		}
		p, err := os.ReadFile(pcsv)
		if err != nil {
			t.Fatal(err)
		}
		r, err := os.ReadFile(rcsv)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 || !bytes.Equal(p, r) {
			t.Errorf("%s: predict's CSV differs from the full audit's", c.name)
		}
	}

	// Refusals, on the embedding model's artifact.
	art := filepath.Join(dir, "embed_input.rna")
	test := filepath.Join(modelioDir, "embed_input_test.csv")
	b, err := os.ReadFile(art)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.rna")
	v := bytes.Clone(b)
	v[len("rnnaudit-fit\r\n")] = 2 // format version 2
	if err := os.WriteFile(old, v, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCmd("predict", "--load", old, "--data", test, "--quiet")
	if code != 1 || !strings.Contains(errs, "format version 2") || !strings.Contains(errs, "fit again") {
		t.Errorf("predict of a version-2 artifact: exit %d, %s", code, errs)
	}
	// Data without the column dow, which fills x_cat.
	rows := strings.Split(strings.TrimSpace(readText(t, test)), "\n")
	var cut []string
	for _, l := range rows {
		f := strings.Split(l, ",")
		cut = append(cut, strings.Join(append(f[:5:5], f[6:]...), ","))
	}
	if !strings.HasPrefix(cut[0], "id,t,x1,x2,store,y") {
		t.Fatalf("header %q: the test file's columns changed", cut[0])
	}
	nodow := filepath.Join(dir, "nodow.csv")
	if err := os.WriteFile(nodow, []byte(strings.Join(cut, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCmd("predict", "--load", art, "--data", nodow, "--quiet")
	if code != 1 || !strings.Contains(errs, "dow") || !strings.Contains(errs, "nodow.csv") {
		t.Errorf("predict of data without a feature column: exit %d, %s", code, errs)
	}
	code, _, errs = runCmd("predict", "--load", art, "--model", filepath.Join(modelioDir, "embed_named.onnx"), "--data", test, "--quiet")
	if code != 1 || !strings.Contains(errs, "SHA-256") {
		t.Errorf("predict with another model: exit %d, %s", code, errs)
	}
	// audit fit takes no test data, even from a configuration file.
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("test: "+test+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCmd("fit", "--save", filepath.Join(dir, "x.rna"), "--config", cfg, "--model", filepath.Join(modelioDir, "embed_input.onnx"),
		"--data", filepath.Join(modelioDir, "embed_input_train.csv"), "--input", "x_cat=store,dow")
	if code != 2 || !strings.Contains(errs, "no test data") {
		t.Errorf("fit with test data in the configuration: exit %d, %s", code, errs)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

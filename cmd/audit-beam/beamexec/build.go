package beamexec

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	// The audit command's dependencies, so that this module's go.sum
	// holds them for Build.
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/pflag"
	_ "golang.org/x/term"
	_ "gopkg.in/yaml.v3"

	_ "github.com/rnnaudit/rnnaudit/reports"
)

// Build builds the audit-beam binary at out: the audit command's
// package with engine.go.in (this module's root) added by go build
// -overlay; static: with CGO_ENABLED=0, as a worker binary must be (the
// tests build without it, to share their build cache). It runs the go
// command in this module, which must be the working directory or one of
// its parents.
func Build(out string, static bool) error {
	list := func(args ...string) (string, error) {
		b, err := exec.Command("go", args...).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	here, err := list("list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return err
	}
	main, err := list("list", "-m", "-f", "{{.Dir}}", "github.com/rnnaudit/rnnaudit")
	if err != nil {
		return err
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(main, "cmd", "audit", "zz_beam_engine.go"): filepath.Join(here, "engine.go.in"),
	}})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "audit-beam-overlay-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(ov); err != nil {
		return err
	}
	f.Close()
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-overlay", f.Name(), "-o", abs, "github.com/rnnaudit/rnnaudit/cmd/audit")
	cmd.Dir = here
	if static {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -overlay: %w", err)
	}
	return nil
}

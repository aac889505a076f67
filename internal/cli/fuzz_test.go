package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfig checks that any YAML config file gives a checked plan or an
// error, never a panic, and that the error prints as a few lines without
// control characters (the config's keys and values are the user's text).
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		"model: m.onnx\ndata: d.csv\nalpha: 0.2\nout: [r.html, r.json]\n",
		"features: [a, 'b,c', \"d\"]\nlow: 0\nhigh: ~\n",
		"blocks: interval\nblock-length: 3\n",
		"- a\n- b\n",
		"alpha: [1, 2]\n",
		"model: &a x\ndata: *a\n",
		"out: {a: 1}\n",
		"\x1b[2J: 1\n",
		"a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := parse([]string{"--config", path})
		if (p == nil) == (err == nil) {
			t.Fatalf("plan %v and error %v: want exactly one", p, err)
		}
		if err == nil {
			return
		}
		var b bytes.Buffer
		printError(&b, err)
		msg := b.String()
		if strings.ContainsAny(msg, "\x1b\x07") {
			t.Fatalf("control characters in %q", msg)
		}
		if n := strings.Count(msg, "\n"); n > 25 {
			t.Fatalf("a message of %d lines: %q", n, msg)
		}
	})
}

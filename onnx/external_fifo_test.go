package onnx_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestExternalDataSpecialFiles checks that an external data file that is
// a named pipe nobody writes, or a directory, is refused at once, naming
// the file, instead of waiting for a writer.
func TestExternalDataSpecialFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes")
	}
	for _, c := range []struct {
		make func(string) error
		want string
	}{
		{func(p string) error { return syscall.Mkfifo(p, 0o600) }, "it is a named pipe, not a regular file"},
		{func(p string) error { return os.Mkdir(p, 0o755) }, "it is a directory, not a regular file"},
	} {
		path := externalModel(t, "special.bin", nil, 8)
		if err := c.make(filepath.Join(filepath.Dir(path), "special.bin")); err != nil {
			t.Fatal(err)
		}
		_, err := onnx.Load(path)
		if err == nil || !strings.Contains(err.Error(), `external data file "special.bin"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming special.bin and saying %q", err, c.want)
		}
	}
}

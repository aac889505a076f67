package blocks_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/rnnaudit/rnnaudit/blocks"
)

// TestReadScale is a measurement, not a test: the live heap after
// reading SCALE_READ (e.g. benchmarks/scale's train_1000000.csv); run
// under /usr/bin/time -v for the peak resident memory of the reading.
func TestReadScale(t *testing.T) {
	path := os.Getenv("SCALE_READ")
	if path == "" {
		t.Skip("a measurement: SCALE_READ=../benchmarks/scale/data/train_1000000.csv go test ./blocks -run TestReadScale -v")
	}
	d, err := blocks.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d sequences, %d rows: live heap %d MB", d.Len(), d.Rows(), ms.HeapAlloc>>20)
	runtime.KeepAlive(d)
}

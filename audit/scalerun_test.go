package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/blocks"
	"github.com/rnnaudit/rnnaudit/onnx"
)

// TestScaleRun is a measurement, not a test: the audit of
// benchmarks/scale's 64-unit LSTM on the training file SCALE_TRAIN (and
// its test_1000.csv), in process, with the phases' wall and CPU times
// (user + system, of the whole process, the collector's heap measurement
// at each phase's start left out) and the heap at each phase's start on
// stderr, a heap profile at the start of the phase
// SCALE_HEAP_PHASE into SCALE_HEAP (go tool pprof), and the JSON's
// limits' SHA-256 (to compare builds bit for bit). Run with
// -cpuprofile for where the CPU goes:
//
//	SCALE_TRAIN=../benchmarks/scale/data/train_100000.csv go test ./audit \
//	    -run TestScaleRun -v -timeout 0 -cpuprofile cpu.prof
func TestScaleRun(t *testing.T) {
	path := os.Getenv("SCALE_TRAIN")
	if path == "" {
		t.Skip("a measurement: SCALE_TRAIN=../benchmarks/scale/data/train_100000.csv go test ./audit -run TestScaleRun -v")
	}
	dir := filepath.Join("..", "benchmarks", "scale")
	start := time.Now()
	g, err := onnx.Load(filepath.Join(dir, "lstm64.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	train, err := blocks.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	test, err := blocks.ReadFile(filepath.Join(dir, "data", "test_1000.csv"),
		&blocks.Options{Features: train.Features, Targets: train.Targets, OptionalTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	cpu := func() float64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	heap := func() string {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return fmt.Sprintf("heap %d MB, sys %d MB", ms.HeapAlloc>>20, ms.Sys>>20)
	}
	t.Logf("read %.1f s (%.1f CPU s), %s", time.Since(start).Seconds(), cpu(), heap())
	phase, last, lastCPU := "", time.Now(), cpu()
	layout, _ := onnx.DetectLayout(g)
	opt := &audit.Options{Layout: layout, Progress: func(p audit.Progress) {
		if p.Phase == phase {
			return
		}
		if p.Phase == os.Getenv("SCALE_HEAP_PHASE") {
			if f, err := os.Create(os.Getenv("SCALE_HEAP")); err == nil {
				runtime.GC()
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		c := cpu()
		t.Logf("%-14s %.1f s, %.1f CPU s; start %s: %s", phase, time.Since(last).Seconds(), c-lastCPU, p.Phase, heap())
		phase, last, lastCPU = p.Phase, time.Now(), cpu()
	}}
	res, err := audit.Run(context.Background(), g, train, test, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%-14s %.1f s, %.1f CPU s; end: %s", phase, time.Since(last).Seconds(), cpu()-lastCPU, heap())
	b, err := json.Marshal(res.Sequences)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("total %.1f s; %d sequences, results sha256 %x", time.Since(start).Seconds(), len(res.Sequences), sha256.Sum256(b))
}

// Command audit tells how far to trust a recurrent model. From an ONNX
// export of a trained RNN, LSTM or GRU and its training data, it gives
// every forecast a confidence interval (the blockwise infinitesimal
// jackknife+), measures how well the intervals cover on test data, and
// writes a report.
//
// Usage:
//
//	audit --model m.onnx --data train.csv [--test test.csv] [--out report.html] [flags]
//	audit inspect --model m.onnx
//	audit fit --model m.onnx --data train.csv [--calibration cal.csv] [flags] --save audit.rna
//	audit predict --load audit.rna --data new.csv [--out x.csv|x.json|x.html]
//	audit serve --load audit.rna [--addr 127.0.0.1:8080]
//
// audit --help prints every command and flag (internal/cli/usage.txt);
// the command line is the library internal/cli.
package main

import (
	"os"

	"github.com/rnnaudit/rnnaudit/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr, nil))
}

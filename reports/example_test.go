package reports_test

import (
	"fmt"
	"os"

	"github.com/rnnaudit/rnnaudit/audit"
	"github.com/rnnaudit/rnnaudit/audit/interval"
	"github.com/rnnaudit/rnnaudit/reports"
)

func ExampleFormatOf() {
	for _, name := range []string{"report.html", "report.md", "result.json", "report.pdf"} {
		f, err := reports.FormatOf(name)
		fmt.Println(name, f, err != nil)
	}
	// Output:
	// report.html html false
	// report.md markdown false
	// result.json json false
	// report.pdf Format(0) true
}

func ExampleWriteSummary() {
	low := 4.0
	r := &audit.Result{
		Setting: audit.Setting{Alpha: 0.1, NominalCover: 0.9, GuaranteedMin: 0.8, Low: &low},
		Summary: &audit.Summary{Alpha: 0.1, Coverage: 0.893, Points: 10000, MeanLength: 2.5, RMSE: 1.1,
			JointCoverage: 0.41, Naive: audit.NaiveSummary{Coverage: 0.84, MeanLength: 2.1},
			Audit: interval.Audit{Low: &interval.Threshold{Threshold: 4, Precision: 0.81, Recall: 0.9, Flagged: 100, True: 81, Actual: 90}}},
	}
	r.Verdict = audit.Judge(r) // audit.Run judges the Results it makes
	reports.WriteSummary(os.Stdout, r)
	// Output:
	// 90% intervals covered 89.3% of 10,000 test values; flagged ‘below 4’ with 81.0% precision.
	// Coverage is at the 90% target (within sampling error, ±1.0 points).
	// Mean interval width 2.5 (in-sample residual intervals: 2.1, covering 84.0%); RMSE of the predictions 1.1; every step covered in 41.0% of sequences.
}

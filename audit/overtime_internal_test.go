package audit

import (
	"testing"

	"github.com/rnnaudit/rnnaudit/audit/adaptive"
	"github.com/rnnaudit/rnnaudit/audit/interval"
)

// TestDependentToleranceIndependent: without serial dependence
// (inflation 1) the over-time tolerance is the verdict's tolerance of
// independent values.
func TestDependentToleranceIndependent(t *testing.T) {
	t.Parallel()
	if got, want := adaptive.DependentTolerance(0.9, 2000, 1), interval.CoverageTolerance(0.9, 2000); got != want {
		t.Errorf("independent values: %v, want CoverageTolerance's %v", got, want)
	}
}

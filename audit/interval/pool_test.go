package interval

import (
	"slices"
	"testing"
)

// TestPoolRows works the rule by hand with need 9: rows with 9 or more
// keep their own; row 3 (4 values) adds row 2 (5) to reach 9; row 4 (0)
// adds rows 3 (4) and 5 (2), then 2 (5); row 5 (2), the last, adds row 4
// (0), then 3 (4), then 2 (5).
func TestPoolRows(t *testing.T) {
	t.Parallel()
	got := PoolRows([]int{12, 9, 5, 4, 0, 2}, 9)
	want := [][]int{{0}, {1}, {2, 1}, {3, 2}, {4, 3, 5, 2}, {5, 4, 3, 2}}
	for r := range want {
		if !slices.Equal(got[r], want[r]) {
			t.Errorf("row %d pools %v, want %v", r, got[r], want[r])
		}
	}
	// Too few in all: every row takes them all.
	if got := PoolRows([]int{1, 2}, 9); !slices.Equal(got[0], []int{0, 1}) || !slices.Equal(got[1], []int{1, 0}) {
		t.Errorf("too few: %v", got)
	}
}

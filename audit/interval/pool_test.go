package interval

import (
	"slices"
	"testing"
)

// TestGroupValues checks the default group size by hand: at alpha 0.1,
// 19 values put the quantile on rank ceil(0.9 x 20) = 18, one below the
// largest, while 18 values put it on rank ceil(0.9 x 19) = 18, the
// largest; at 0.05, 39 (rank 38) against 38 (rank 38); at 0.2, 9 (rank
// 8) against 8 (rank 8).
func TestGroupValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		alpha float64
		want  int
	}{{0.1, 19}, {0.05, 39}, {0.2, 9}, {0.5, 3}} {
		if got := GroupValues(c.alpha); got != c.want {
			t.Errorf("GroupValues(%g) = %d, want %d", c.alpha, got, c.want)
		}
	}
}

// TestGroupRows works the rule by hand with need 9 on counts 12, 9, 5,
// 4, 0, 2, 30, 3: rows 0 and 1 have 9 or more and are groups of their
// own; rows 2 and 3 gather 5 + 4 = 9 and close; rows 4 and 5 gather 0 +
// 2 and meet row 6 (30, a group of its own) short, so they join the
// group before, rows 2-5; row 7 (3) ends short and joins row 6.
func TestGroupRows(t *testing.T) {
	t.Parallel()
	got := GroupRows([]int{12, 9, 5, 4, 0, 2, 30, 3}, 9)
	want := [][]int{{0}, {1}, {2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}, {6, 7}, {6, 7}}
	for r := range want {
		if !slices.Equal(got[r], want[r]) {
			t.Errorf("row %d is grouped with %v, want %v", r, got[r], want[r])
		}
	}
	// A short run at the start joins the group after it: rows 0-1 (2 +
	// 3) meet row 2 (30); row 3 (1) then joins that group too.
	got = GroupRows([]int{2, 3, 30, 1}, 9)
	for r := range 4 {
		if !slices.Equal(got[r], []int{0, 1, 2, 3}) {
			t.Errorf("leading short run: row %d is grouped with %v, want rows 0-3", r, got[r])
		}
	}
	// Too few in all: one group.
	if got := GroupRows([]int{1, 2}, 9); !slices.Equal(got[0], []int{0, 1}) || !slices.Equal(got[1], []int{0, 1}) {
		t.Errorf("too few: %v", got)
	}
	// The clinical benchmark's quinidine calibration counts with need 19:
	// row 0 (22) alone, rows 1-2 gather 14 + 7 = 21, rows 3-9 (11) end
	// short and join them.
	got = GroupRows([]int{22, 14, 7, 3, 2, 1, 1, 1, 1, 1}, 19)
	if !slices.Equal(got[0], []int{0}) || !slices.Equal(got[9], []int{1, 2, 3, 4, 5, 6, 7, 8, 9}) || !slices.Equal(got[2], got[9]) {
		t.Errorf("quinidine: %v", got)
	}
}

// TestGroupNeedAndHorizons: the need is the option when set, the default
// 19 at alpha 0.1 otherwise, never below the 9 a finite quantile needs;
// two horizons are grouped apart (horizon 1's rows 0-1 have 5 + 4 = 9,
// horizon 2's row 1 has 20 and row 0 none, so rows 0-1 join).
func TestGroupNeedAndHorizons(t *testing.T) {
	t.Parallel()
	if GroupNeed(0.1, 0) != 19 || GroupNeed(0.1, 3) != 9 || GroupNeed(0.1, 30) != 30 {
		t.Errorf("need %d %d %d, want 19 9 30", GroupNeed(0.1, 0), GroupNeed(0.1, 3), GroupNeed(0.1, 30))
	}
	g := GroupHorizons([]int{0, 1, 1}, []int{1, 1, 2}, []int{5, 4, 20}, 9)
	if !slices.Equal(g[1][0], []int{0, 1}) || !slices.Equal(g[1][1], []int{0, 1}) || !slices.Equal(g[2][1], []int{0, 1}) || len(g[2]) != 2 {
		t.Errorf("groups %v", g)
	}
}

// TestStepList names rows as 1-based steps with runs as ranges.
func TestStepList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rows []int
		want string
	}{{[]int{2}, "step 3"}, {[]int{0, 1, 2, 3, 8}, "steps 1-4 and 9"}, {[]int{0, 2, 4, 5}, "steps 1, 3 and 5-6"}, {[]int{0, 1}, "steps 1-2"}} {
		if got := StepList(c.rows); got != c.want {
			t.Errorf("StepList(%v) = %q, want %q", c.rows, got, c.want)
		}
	}
}

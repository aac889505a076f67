package words

import "testing"

// TestJoin and TestSteps check hand-written sentences.
func TestJoin(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := Join(c.in, "or"); got != c.want {
			t.Errorf("Join(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSteps(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{[]int{2}, "step 3"}, {[]int{0, 1, 2, 3, 8}, "steps 1-4 and 9"}, {[]int{0, 2, 4}, "steps 1, 3 and 5"}, {[]int{4, 5}, "steps 5-6"}} {
		if got := Steps(c.in); got != c.want {
			t.Errorf("Steps(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

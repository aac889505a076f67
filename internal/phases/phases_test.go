package phases

import (
	"reflect"
	"testing"
)

// TestClock: phases are recorded in the order they begin, a phase begun
// again while current goes on (no second record), every phase is
// announced once as it begins and "" at the end, and the times are not
// negative.
func TestClock(t *testing.T) {
	var said []string
	c := &Clock{Announce: func(name string) { said = append(said, name) }}
	c.Begin("prepare")
	c.Begin("intervals")
	c.Begin("intervals")
	c.Begin("judgement")
	ph := c.End()
	var names []string
	for _, p := range ph {
		names = append(names, p.Name)
		if p.Seconds < 0 || p.CPUSeconds < 0 {
			t.Errorf("%s: %v s, %v CPU s", p.Name, p.Seconds, p.CPUSeconds)
		}
	}
	if want := []string{"prepare", "intervals", "judgement"}; !reflect.DeepEqual(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
	if want := []string{"prepare", "intervals", "judgement", ""}; !reflect.DeepEqual(said, want) {
		t.Errorf("announced %v, want %v", said, want)
	}
	var zero Clock
	zero.Begin("a")
	if got := zero.End(); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("zero Clock: %v", got)
	}
}

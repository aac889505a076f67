package errs

import (
	"fmt"
	"strconv"
	"strings"
)

// A Group is one distinct problem of a List with every line it was found
// at: a file with the same bad cell on forty rows is one problem at forty
// lines, written once with the lines counted, not forty times.
type Group struct {
	// First is the group's first problem in the list (written as it is
	// when the group has one line, or none).
	First error
	// Key is what the group's problems share: their message without the
	// line ("" for a problem without a line, a group of its own).
	Key string
	// Lines are the lines of the group's problems, in list order.
	Lines []int
	// More is the number of further lines with the group's problem that
	// the pass counted without listing them (the Unlisted of its Repeated
	// problems), to be counted after Lines: Lines(g.Lines, n, g.More).
	More int
}

// Group gathers the problems of l that place says are the same problem
// (the same key) at different lines, in the order of their first
// appearance; a problem for which place returns ok false is a group of
// its own.
func (l List) Group(place func(error) (key string, line int, ok bool)) []Group {
	var groups []Group
	at := map[string]int{}
	for _, e := range l {
		key, line, ok := place(e)
		if !ok {
			groups = append(groups, Group{First: e, More: unlisted(e)})
			continue
		}
		if i, seen := at[key]; seen {
			groups[i].Lines = append(groups[i].Lines, line)
			groups[i].More += unlisted(e)
			continue
		}
		at[key] = len(groups)
		groups = append(groups, Group{First: e, Key: key, Lines: []int{line}, More: unlisted(e)})
	}
	return groups
}

// Lines writes the lines of a problem for a message, the first shown of
// them and a count of the rest, with more further lines known but not
// listed: "line 3", "lines 3 and 9", "lines 3, 9, 12 and 41 more".
func Lines(lines []int, shown, more int) string {
	if len(lines) == 1 && more == 0 {
		return "line " + strconv.Itoa(lines[0])
	}
	n := min(len(lines), max(shown, 1))
	parts := make([]string, n)
	for i, l := range lines[:n] {
		parts[i] = strconv.Itoa(l)
	}
	rest := len(lines) - n + more
	if rest > 0 {
		return fmt.Sprintf("lines %s and %d more", strings.Join(parts, ", "), rest)
	}
	return fmt.Sprintf("lines %s and %s", strings.Join(parts[:n-1], ", "), parts[n-1])
}

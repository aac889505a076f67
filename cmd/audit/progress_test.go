package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/audit"
)

// TestProgress drives the progress display with the events of an audit
// and checks that every phase ends in one line with its time.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	for _, ev := range []audit.Progress{
		{Phase: "prepare"},
		{Phase: "block gradients"},
		{Phase: "leave-one-block-out residuals"},
		{Phase: "leave-one-block-out residuals", Done: 1, Total: 3},
		{Phase: "leave-one-block-out residuals", Done: 2, Total: 3},
		{Phase: "leave-one-block-out residuals", Done: 3, Total: 3},
		{Phase: "intervals", Done: 1, Total: 2},
		{Phase: ""},
	} {
		p.report(ev)
	}
	p.done()
	out := b.String()
	var lines []string
	for _, l := range regexp.MustCompile(`[\r\n]`).Split(out, -1) {
		if l = strings.TrimSpace(l); regexp.MustCompile(`^[a-z -]+ +[0-9.]+[mµn]?s$`).MatchString(l) {
			lines = append(lines, strings.Fields(l)[0])
		}
	}
	if got := strings.Join(lines, " "); got != "prepare block leave-one-block-out intervals" {
		t.Errorf("phase lines %q in output %q", got, out)
	}
}

// TestNoProgressWhenNotTerminal: a buffer is not a terminal.
func TestNoProgressWhenNotTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

package graph

import (
	"fmt"
	"regexp"
	"strings"
)

// Restrict returns a copy of g whose parameters are only the current
// parameters whose names keep accepts; the others become constants. The
// flat vector of the copy keeps the original order among the kept tensors.
// It is an error when nothing is kept.
func (g *Graph) Restrict(keep func(name string) bool) (*Graph, error) {
	r := *g
	r.params, r.theta, r.isParam = nil, nil, map[string]int{}
	off := 0
	for _, p := range g.params {
		if !keep(p.Name) {
			continue
		}
		q := p
		q.Offset = off
		r.isParam[p.Name] = len(r.params)
		r.params = append(r.params, q)
		r.theta = append(r.theta, g.theta[p.Offset:p.Offset+p.Size]...)
		off += p.Size
	}
	if len(r.params) == 0 {
		names := make([]string, len(g.params))
		for i, p := range g.params {
			names[i] = p.Name
		}
		return nil, fmt.Errorf("graph: no parameter matches; the model's parameters are %s", strings.Join(names, ", "))
	}
	return &r, nil
}

// ParamPattern compiles a parameter selection: comma-separated glob
// patterns where * matches any run of characters (including / and .) and
// ? any one character, matched against the whole initializer name. For
// example "head.*" or "*LSTM*,head.bias".
func ParamPattern(pattern string) (func(name string) bool, error) {
	var res []*regexp.Regexp
	for _, glob := range strings.Split(pattern, ",") {
		glob = strings.TrimSpace(glob)
		if glob == "" {
			continue
		}
		var b strings.Builder
		b.WriteString("^")
		for _, r := range glob {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString("$")
		re, err := regexp.Compile(b.String())
		if err != nil {
			return nil, fmt.Errorf("graph: parameter pattern %q: %w", glob, err)
		}
		res = append(res, re)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("graph: empty parameter pattern")
	}
	return func(name string) bool {
		for _, re := range res {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}, nil
}

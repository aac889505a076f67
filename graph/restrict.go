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
// example "head.*" or "*LSTM*,head.bias". A pattern after "!" excludes
// what it matches: "!mean,!std" keeps every parameter but mean and std,
// "*LSTM*,!*bias*" the LSTM's parameters but its biases.
func ParamPattern(pattern string) (func(name string) bool, error) {
	var res, not []*regexp.Regexp
	for _, glob := range strings.Split(pattern, ",") {
		glob = strings.TrimSpace(glob)
		neg := strings.HasPrefix(glob, "!")
		glob = strings.TrimSpace(strings.TrimPrefix(glob, "!"))
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
		if neg {
			not = append(not, re)
		} else {
			res = append(res, re)
		}
	}
	if len(res)+len(not) == 0 {
		return nil, fmt.Errorf("graph: empty parameter pattern")
	}
	match := func(list []*regexp.Regexp, name string) bool {
		for _, re := range list {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
	return func(name string) bool {
		return (len(res) == 0 || match(res, name)) && !match(not, name)
	}, nil
}

// TrainedKey is the key of the ONNX metadata entry in which an exporter
// (the Python bridge's export) records which initializers hold trained
// values, as a JSON list of names.
const TrainedKey = "rnnaudit.parameters"

// WithTrained returns a copy of g whose parameters are exactly the float
// initializers named in trained that the outputs depend on, in file
// order: the exporter's record of what was trained replaces the rules by
// which initializers are constants. Every other initializer is a
// constant (Constants says why). Names that are not initializers are
// returned as unknown; it is an error when no parameter is left.
func (g *Graph) WithTrained(trained []string) (r *Graph, unknown []string, err error) {
	c := *g
	c.params, c.theta, c.isParam = nil, nil, nil
	c.trained = map[string]bool{}
	for _, name := range trained {
		c.trained[name] = true
		if _, ok := g.Init[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	c.collectParams()
	if len(c.params) == 0 {
		return nil, unknown, fmt.Errorf("graph: none of the %d initializers recorded as trained (%s) is a float initializer the outputs depend on", len(trained), TrainedKey)
	}
	return &c, unknown, nil
}

// TrainedRecord reports whether the parameters of g are an exporter's
// record of what was trained (WithTrained) rather than the rules'.
func (g *Graph) TrainedRecord() bool { return g.trained != nil }

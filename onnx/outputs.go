package onnx

import (
	"fmt"
	"strings"

	"github.com/rnnaudit/rnnaudit/graph"
)

// Pruned is what LoadOutput left out of a model: the outputs other than
// the forecast, the graph inputs the forecast does not read, and how many
// nodes computed only those outputs.
type Pruned struct {
	Outputs []graph.ValueInfo
	Inputs  []graph.ValueInfo
	Nodes   int
}

// LoadOutput reads the ONNX model at path like Load, keeping only the
// output named output ("" keeps the first declared output) and the nodes,
// graph inputs and initializers it depends on.
//
// A model often returns more than its forecast: a Gaussian head's
// log-variance, an attention map, the final hidden state. The audit
// differentiates and evaluates the forecast alone, so the nodes that only
// feed the other outputs are dropped before the graph is built: an
// operator there that the engine does not implement (a Clip on the
// log-variance) does not refuse the model, and an input read only there
// need not be filled.
func LoadOutput(path, output string) (*graph.Graph, *Pruned, error) {
	keep := &pruning{name: output}
	g, err := load(path, keep)
	if err != nil {
		return nil, nil, err
	}
	return g, &keep.pruned, nil
}

// pruning keeps one output of a model being decoded and records what it
// drops.
type pruning struct {
	name   string
	pruned Pruned
}

// prune keeps the output p.name (the first when ""), the nodes it depends
// on (in their order) and the graph inputs it reads.
func (p *pruning) prune(inputs, outputs []graph.ValueInfo, nodes []*graph.Node, init map[string]*graph.Tensor) ([]graph.ValueInfo, []graph.ValueInfo, []*graph.Node, error) {
	if len(outputs) == 0 {
		return inputs, outputs, nodes, nil
	}
	k := 0
	if p.name != "" {
		k = -1
		var names []string
		for i, o := range outputs {
			names = append(names, fmt.Sprintf("%q", o.Name))
			if o.Name == p.name {
				k = i
			}
		}
		if k < 0 {
			return nil, nil, nil, fmt.Errorf("the model has no output %q: its outputs are %s", p.name, strings.Join(names, ", "))
		}
	}
	for i, o := range outputs {
		if i != k {
			p.pruned.Outputs = append(p.pruned.Outputs, o)
		}
	}
	producer := map[string]int{}
	for i, n := range nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	need := map[string]bool{}
	keepNode := make([]bool, len(nodes))
	stack := []string{outputs[k].Name}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if need[v] {
			continue
		}
		need[v] = true
		if i, ok := producer[v]; ok && !keepNode[i] {
			keepNode[i] = true
			stack = append(stack, nodes[i].Inputs...)
		}
	}
	var kept []*graph.Node
	for i, n := range nodes {
		if keepNode[i] {
			kept = append(kept, n)
		} else {
			p.pruned.Nodes++
		}
	}
	var ins []graph.ValueInfo
	for _, in := range inputs {
		_, isInit := init[in.Name]
		if need[in.Name] || isInit {
			ins = append(ins, in)
		} else {
			p.pruned.Inputs = append(p.pruned.Inputs, in)
		}
	}
	return ins, outputs[k : k+1], kept, nil
}

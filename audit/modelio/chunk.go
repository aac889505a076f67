package modelio

import (
	"fmt"
	"slices"

	"github.com/rnnaudit/rnnaudit/graph"
)

// A model exported with a fixed batch size (the plain torch.onnx.export
// of the PyTorch tutorial, torch.onnx.export(model, x, path), fixes the
// batch of the example x) runs on a batch of any size B in chunks of that
// size: the model's nodes are applied to each chunk of the batch, the
// last chunk padded with copies of the batch's last sequence, and the
// chunks' outputs are joined and cut back to B. The rewritten graph keeps
// the model's parameters (graph.Rewired), so that every derivative the
// audit takes goes through the chunks unchanged; a padding copy's
// outputs are cut away, so it adds nothing to any loss or gradient.

// fixedBatch returns the batch size that the model's sequence inputs
// declare, or 0 when their batch axis is open; an error when two inputs
// declare different sizes.
func (m *IO) fixedBatch() (int, error) {
	fb := 0
	for i, f := range m.fills {
		in := m.g.Inputs[i]
		ax := m.batchAxis(i)
		if f.rank == 0 || in.Dims == nil || ax >= len(in.Dims) {
			continue
		}
		if v := in.Dims[ax].Value; v > 0 {
			if fb > 0 && v != fb {
				return 0, fmt.Errorf("audit: the model's inputs fix the batch size at %d and at %d (input %q is declared %s)", fb, v, in.Name, in.ShapeString())
			}
			fb = v
		}
	}
	return fb, nil
}

// batchAxis is the axis of graph input i that indexes the sequences of a
// batch: 0 for the sequence lengths and per-sequence values in either
// layout.
func (m *IO) batchAxis(i int) int {
	if m.fills[i].lengths || m.fills[i].static || m.layout == graph.BatchFirst {
		return 0
	}
	return 1
}

// outBatchAxis is the axis of output o that indexes the sequences: the
// one axis declared with the fixed batch size fb, or else the layout's
// (1 for the time-first per-step outputs [time, batch, ...], else 0).
func (m *IO) outBatchAxis(o graph.ValueInfo, fb int) int {
	var at []int
	for a, d := range o.Dims {
		if d.Value == fb {
			at = append(at, a)
		}
	}
	if len(at) == 1 {
		return at[0]
	}
	if m.layout != graph.BatchFirst && len(o.Dims) != 1 && (len(at) == 0 || slices.Contains(at, 1)) {
		return 1
	}
	return 0
}

// graphFor returns the graph that runs a batch of B sequences: the model
// itself when its batch axis is open, else the model rewritten to run in
// chunks of its fixed batch size (made once per B).
func (m *IO) graphFor(B int) (*graph.Graph, error) {
	if m.fixedB == 0 {
		return m.g, nil
	}
	m.chunkMu.Lock()
	defer m.chunkMu.Unlock()
	if g, ok := m.chunked[B]; ok {
		return g, nil
	}
	g, err := m.chunkGraph(B)
	if err != nil {
		return nil, fmt.Errorf("audit: the model fixes its batch size at %d and cannot be run in chunks of that size: %w", m.fixedB, err)
	}
	if m.chunked == nil {
		m.chunked = map[int]*graph.Graph{}
	}
	m.chunked[B] = g
	return g, nil
}

// chunkName is the name of value name in chunk c.
func chunkName(c int, name string) string { return fmt.Sprintf("chunk%d/%s", c, name) }

// indexNode is a Constant node holding int64 indices.
func indexNode(name string, idx []int64) *graph.Node {
	return &graph.Node{Name: name, OpType: "Constant", Outputs: []string{name},
		Attrs: map[string]graph.Attr{"value": {Kind: graph.AttrTensor, T: graph.NewInt([]int{len(idx)}, idx)}}}
}

// gatherNode takes the entries idx of axis ax of value in.
func gatherNode(name, in, idx, out string, ax int) *graph.Node {
	return &graph.Node{Name: name, OpType: "Gather", Inputs: []string{in, idx}, Outputs: []string{out},
		Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: int64(ax)}}}
}

// openAxis returns v with axis ax declared as a symbolic batch axis.
func openAxis(v graph.ValueInfo, ax int) graph.ValueInfo {
	if ax < len(v.Dims) {
		v.Dims = slices.Clone(v.Dims)
		v.Dims[ax] = graph.Dim{Value: -1, Name: "batch"}
	}
	return v
}

// chunkGraph rewrites the model to run on B sequences in chunks of its
// fixed batch size.
func (m *IO) chunkGraph(B int) (*graph.Graph, error) {
	g, fb := m.g, m.fixedB
	k := (B + fb - 1) / fb
	var nodes []*graph.Node
	inputs := make([]graph.ValueInfo, len(g.Inputs))
	for i, in := range g.Inputs {
		inputs[i] = openAxis(in, m.batchAxis(i))
	}
	rename := func(c int, name string) string {
		if _, init := g.Init[name]; init || name == "" {
			return name
		}
		return chunkName(c, name)
	}
	for c := range k {
		idx := make([]int64, fb)
		for j := range idx {
			idx[j] = int64(min(c*fb+j, B-1))
		}
		iname := chunkName(c, "rnnaudit_batch_index")
		nodes = append(nodes, indexNode(iname, idx))
		for i, in := range g.Inputs {
			nodes = append(nodes, gatherNode(chunkName(c, "rnnaudit_gather_"+in.Name), in.Name, iname, chunkName(c, in.Name), m.batchAxis(i)))
		}
		for _, n := range g.Nodes {
			cp := *n
			if n.Name != "" {
				cp.Name = chunkName(c, n.Name)
			}
			cp.Inputs = make([]string, len(n.Inputs))
			for j, in := range n.Inputs {
				cp.Inputs[j] = rename(c, in)
			}
			cp.Outputs = make([]string, len(n.Outputs))
			for j, o := range n.Outputs {
				cp.Outputs[j] = rename(c, o)
			}
			nodes = append(nodes, &cp)
		}
	}
	keep := make([]int64, B)
	for j := range keep {
		keep[j] = int64(j)
	}
	nodes = append(nodes, indexNode("rnnaudit_keep", keep))
	outputs := make([]graph.ValueInfo, len(g.Outputs))
	for i, o := range g.Outputs {
		ax := m.outBatchAxis(o, fb)
		outputs[i] = openAxis(o, ax)
		joined := chunkName(0, o.Name)
		if k > 1 {
			joined = "rnnaudit_joined/" + o.Name
			var parts []string
			for c := range k {
				parts = append(parts, chunkName(c, o.Name))
			}
			nodes = append(nodes, &graph.Node{Name: joined, OpType: "Concat", Inputs: parts, Outputs: []string{joined},
				Attrs: map[string]graph.Attr{"axis": {Kind: graph.AttrInt, I: int64(ax)}}})
		}
		nodes = append(nodes, gatherNode("rnnaudit_cut/"+o.Name, joined, "rnnaudit_keep", o.Name, ax))
	}
	return g.Rewired(inputs, outputs, nodes)
}

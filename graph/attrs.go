package graph

// Typed attribute access for lowerings. Each getter returns the default when
// the attribute is absent and an ErrAttr error when it has another kind.

func (n *Node) attr(name string, kind AttrKind) (Attr, bool, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return Attr{}, false, nil
	}
	if a.Kind != kind {
		return Attr{}, false, attrErr("attribute %q has the wrong type", name)
	}
	return a, true, nil
}

func (n *Node) attrInt(name string, def int64) (int64, error) {
	a, ok, err := n.attr(name, AttrInt)
	if err != nil || !ok {
		return def, err
	}
	return a.I, nil
}

func (n *Node) attrFloat(name string, def float64) (float64, error) {
	a, ok, err := n.attr(name, AttrFloat)
	if err != nil || !ok {
		return def, err
	}
	return a.F, nil
}

func (n *Node) attrString(name, def string) (string, error) {
	a, ok, err := n.attr(name, AttrString)
	if err != nil || !ok {
		return def, err
	}
	return a.S, nil
}

// attrInts returns the list and whether it was present.
func (n *Node) attrInts(name string) ([]int64, bool, error) {
	a, ok, err := n.attr(name, AttrInts)
	if err != nil || !ok {
		return nil, ok, err
	}
	return a.Ints, true, nil
}

func (n *Node) attrFloats(name string) ([]float64, bool, error) {
	a, ok, err := n.attr(name, AttrFloats)
	if err != nil || !ok {
		return nil, ok, err
	}
	return a.Floats, true, nil
}

func (n *Node) attrStrings(name string) ([]string, bool, error) {
	a, ok, err := n.attr(name, AttrStrings)
	if err != nil || !ok {
		return nil, ok, err
	}
	return a.Strings, true, nil
}

func (n *Node) attrTensor(name string) (*Tensor, bool, error) {
	a, ok, err := n.attr(name, AttrTensor)
	if err != nil || !ok {
		return nil, ok, err
	}
	return a.T, true, nil
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

package graph

// This file: the slots a pass binds to its arguments, listed once.

// argSlots lists, in slot order, the slots that every pass points at the
// caller's data: the parameters and inputs, and the live views of them.
// Forward (and the derivative passes' bindParams) walk these short lists
// instead of every slot, which at the paper's scale (a forward pass on a
// chunk of test sequences per perturbed model, tens of thousands per
// audit) was most of the executor's own time. The other live views
// (views of step results, parts and constants) never change their data
// and are bound once, when a State's buffers are made (bindViews).
type argSlots struct {
	params, inputs         []int
	paramViews, inputViews []int
}

// argSlots collects p's argSlots; optimize calls it once the slots are
// final.
func (p *Program) argSlots() argSlots {
	var a argSlots
	for i, sl := range p.slots {
		switch sl.kind {
		case slotParam:
			a.params = append(a.params, i)
		case slotInput:
			a.inputs = append(a.inputs, i)
		case slotView:
			if !p.live[i] {
				continue
			}
			switch p.slots[sl.index].kind {
			case slotParam:
				a.paramViews = append(a.paramViews, i)
			case slotInput:
				a.inputViews = append(a.inputViews, i)
			}
		}
	}
	return a
}

// isArgView reports whether a view slot's root is a parameter or an
// input, so that it is bound with them in every pass.
func (p *Program) isArgView(sl slot) bool {
	k := p.slots[sl.index].kind
	return k == slotParam || k == slotInput
}

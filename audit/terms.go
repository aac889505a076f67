package audit

// The training sequences' loss terms held compactly for the LowRank
// path: the model's outputs at theta_hat in the batches' output layout,
// from which a sequence's []ownTerm is made when a pass reaches it.

// termStore gives every training sequence's loss terms (of) as
// problem.ownTerms lists them, from the outputs of the training batches
// (problem.groups) at theta_hat: 8 bytes per output instead of a 56-byte
// ownTerm per term held for the whole audit (0.56 GB at a million
// sequences of ten terms).
type termStore struct {
	p     *problem
	fx    [][]float64 // per batch of p.groups, its outputs at theta_hat
	group []int32     // per training sequence, its batch in p.groups
	row   []int32     // per training sequence, its index in that batch
	full  [][]ownTerm // every sequence's terms, when made (all)
}

// newTermStore indexes the training sequences' terms from the trained
// model's outputs fx on the training batches (problem.trainOutputs).
func newTermStore(p *problem, fx trainOutputs) *termStore {
	n := p.train.Len()
	s := &termStore{p: p, fx: fx, group: make([]int32, n), row: make([]int32, n)}
	for gi, gr := range p.groups {
		for b, i := range gr.seqs {
			s.group[i], s.row[i] = int32(gi), int32(b)
		}
	}
	return s
}

// of returns training sequence i's loss terms, made afresh (nil when it
// has none): the same values, in the same order, as problem.ownTerms.
func (s *termStore) of(i int) []ownTerm {
	if s.full != nil {
		return s.full[i]
	}
	p := s.p
	gi, b := int(s.group[i]), int(s.row[i])
	gr := p.groups[gi]
	B := len(gr.seqs)
	var out []ownTerm
	for k, f := range p.io.Forecasts(gr.T) {
		q := p.io.Index(B, gr.T, b, f.T, f.H)
		if gr.weight[q] != 0 {
			out = append(out, ownTerm{seq: i, f: f, y: gr.target[q], fx: s.fx[gi][q], w: gr.weight[q], forcast: k})
		}
	}
	return out
}

// all returns every sequence's terms, made once and then kept (the
// per-block rule's refinement and diagnostics index them at random).
func (s *termStore) all() [][]ownTerm {
	if s.full == nil {
		full := make([][]ownTerm, s.p.train.Len())
		for i := range full {
			full[i] = s.of(i)
		}
		s.full = full
	}
	return s.full
}

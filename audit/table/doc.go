// Package table holds the low-rank path's block table and the values
// that carry it between machines: what a worker of a distributed
// executor (cmd/audit-beam) reads and writes, and what the in-process
// path computes on the same values. It imports no engine and no part of
// the audit's pipeline (package audit builds the problem, the factor and
// the chunks, and runs them).
// The method is in docs/design.md: the low-rank path in section 4.9,
// the jackknife+ selection in section 5.3.
//
// A leave-one-block-out step delta_b is kept as its k coordinates in a
// low-rank factor's basis (a BlockRecord, a row of the BlockTable), an
// evaluation point as its output-Jacobian row's k coordinates (a
// PointRecord), so that the linearised shift of every block at a point
// is one product of the table with the point's row, and the jackknife+
// limits are exact selections over the table (FinalizeLimits).
//
// An audit with an executor (Executor) is three pipeline runs (Stage),
// each a map over chunks whose inputs, shared value and outputs are raw
// little-endian encodings (MarshalBinary, UnmarshalBinary):
//
//	stage     chunk                     shared (once per worker)   output
//	blocks    BlockChunk: one batch of   FactorSpec: the factor's    BlockChunkOut: per block its
//	          training sequences, their  rows U, its solve in U's    record, |g_b|, |delta_b|,
//	          blocks and loss terms      coordinates, the loss, the  shift and leverage; the sum
//	                                     forecast slots, the rule    of the sequences' gradients
//	points    PointChunk: one batch of   FactorSpec                  PointRecords (EncodePoints)
//	          evaluated sequences and
//	          their points
//	finalize  FinalizeChunk: points'     TableSpec: the block table  ChunkLimits: limits, m,
//	          records                    and the levels              coverage counts
//
// The driver folds the chunks' outputs in chunk order (the gradients as
// an exact GradientSum, the coverage counts as integers), so the result
// does not depend on the order in which an engine runs the chunks.
package table

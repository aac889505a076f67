// Package artifact holds the byte format of a fitted audit (what
// `audit fit --save` writes and `audit predict --load` reads): the
// preamble and the readable JSON header, the body's framing as one gob
// value followed by its float64 arrays raw, and the encoding of those
// arrays. Package audit owns what the body holds (its records, built
// from a fitted audit by Fitted.Save and turned back into one by Load)
// and passes them through here; this package imports no part of the
// audit, so what an artifact is can be read, checked and bounded in one
// place. docs/artifact.md describes the format with its reasons.
package artifact

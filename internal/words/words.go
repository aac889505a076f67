// Package words puts lists into the sentences of messages and notes: a
// list of words as a sentence lists them ("a, b and c"). (Rows as steps,
// "steps 1-4 and 9", are interval.StepList's.)
package words

// Join joins words as a sentence lists them: "a, b and c" (conj "and").
func Join(words []string, conj string) string {
	out := ""
	for i, w := range words {
		switch {
		case i == 0:
		case i == len(words)-1:
			out += " " + conj + " "
		default:
			out += ", "
		}
		out += w
	}
	return out
}

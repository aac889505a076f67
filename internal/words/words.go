// Package words puts lists into the sentences of messages and notes: a
// list of words as a sentence lists them ("a, b and c") and rows as
// 1-based steps with runs as ranges ("steps 1-4 and 9").
package words

import "fmt"

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

// Steps names rows (0-based, increasing) as 1-based steps, runs as
// ranges: "step 3", "steps 1-4 and 9".
func Steps(rows []int) string {
	var parts []string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(rows[i]+1))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rows[i]+1, rows[j]+1))
		}
		i = j + 1
	}
	if len(rows) == 1 {
		return "step " + parts[0]
	}
	return "steps " + Join(parts, "and")
}

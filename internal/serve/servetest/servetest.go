// Package servetest holds what the tests of the server and of the
// command that starts it both need: a request built from a CSV file of
// the small example, and a POST whose JSON answer is decoded.
package servetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// RequestFromCSV is the body of a request that sends the sequences of a
// CSV file of the small example (columns id, t, x, y, no quotes), with
// or without their targets.
func RequestFromCSV(path string, targets bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "id,t,x,y" {
		return nil, fmt.Errorf("%s: header %s", path, lines[0])
	}
	type row struct {
		T        json.Number   `json:"t"`
		Features []json.Number `json:"features"`
		Target   *json.Number  `json:"target,omitempty"`
	}
	type seq struct {
		ID   string `json:"id"`
		Rows []row  `json:"rows"`
	}
	var seqs []*seq
	byID := map[string]*seq{}
	for _, line := range lines[1:] {
		r := strings.Split(line, ",")
		s := byID[r[0]]
		if s == nil {
			s = &seq{ID: r[0]}
			byID[r[0]] = s
			seqs = append(seqs, s)
		}
		w := row{T: json.Number(r[1]), Features: []json.Number{json.Number(r[2])}}
		if targets {
			y := json.Number(r[3])
			w.Target = &y
		}
		s.Rows = append(s.Rows, w)
	}
	return json.Marshal(map[string]any{"sequences": seqs})
}

// Post sends body to url as JSON and returns the status, the header and
// the decoded answer; an answer that is not a JSON object is an error.
func Post(url string, body []byte) (int, http.Header, map[string]any, error) {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	var ans map[string]any
	if err := json.Unmarshal(b, &ans); err != nil {
		return 0, nil, nil, fmt.Errorf("status %d, answer not JSON: %v: %s", resp.StatusCode, err, b)
	}
	return resp.StatusCode, resp.Header, ans, nil
}

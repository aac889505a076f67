package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of arrays and objects a request may
// have: a request needs five levels (the body, sequences, a sequence,
// rows, a row, features); the limit keeps a body of nested brackets from
// growing the decoder's stack.
const maxDepth = 32

// fieldErr is a problem of a request's JSON found while decoding it (a
// key given twice, text that is not UTF-8, nesting too deep), at the
// field of path.
type fieldErr struct {
	path    []any // the keys (string) and indices (int) to the field
	message string
}

func (e *fieldErr) Error() string { return fieldPath(e.path) + ": " + e.message }

// fieldPath writes a path of keys and indices as the request's messages
// name a field: sequences[2].rows[5].features. Keys are cut to a short
// prefix.
func fieldPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(clip(p, maxEcho))
		}
	}
	return b.String()
}

// decodeStrict decodes the one JSON value of body as encoding/json
// decodes it into an any (objects as map[string]any, numbers as
// json.Number), but refuses what encoding/json lets through silently: a
// key given twice in one object (encoding/json keeps the last), text
// that is not UTF-8 (encoding/json replaces invalid bytes and escaped
// lone surrogates with U+FFFD, so that two different ids would become
// one) and nesting deeper than maxDepth. Its error is a *fieldErr naming
// the field, or encoding/json's (a *json.SyntaxError, io.EOF for an empty
// body, io.ErrUnexpectedEOF for a body cut short), or errTrailing for a
// body with more after its value.
func decodeStrict(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailing
	}
	if err := scanStrict(body, !utf8.Valid(body) || hasSurrogateEscape(body)); err != nil {
		return nil, err
	}
	return doc, nil
}

// errTrailing is a body with more than one JSON value.
var errTrailing = errors.New("more than one JSON value")

// scanFrame is an array or object open at a point of scanStrict's walk.
type scanFrame struct {
	object    bool
	expectKey bool // an object's next string is a key
	keys      int  // where an object's keys begin in the walk's keys
	index     int  // an array's element
}

// scanStrict walks body, one JSON value that encoding/json accepted, in
// one pass over its bytes: a key given twice in an object, nesting
// deeper than maxDepth and, when checkText, a string (key or value) that
// is not UTF-8 or holds an escaped lone surrogate are a *fieldErr naming
// the field. It allocates only to grow its stacks.
func scanStrict(body []byte, checkText bool) error {
	var stack []scanFrame
	var keys [][]byte // the keys of the open objects, as sent (between the quotes)
	for i := 0; i < len(body); i++ {
		for i < len(body) && !structural[body[i]] { // numbers, literals, spaces
			i++
		}
		if i == len(body) {
			break
		}
		switch body[i] {
		case '{', '[':
			if len(stack) >= maxDepth {
				return &fieldErr{path: scanPath(stack, keys), message: fmt.Sprintf("nested deeper than %d levels: a request is {\"sequences\": [{\"id\": ..., \"rows\": [...]}]}", maxDepth)}
			}
			stack = append(stack, scanFrame{object: body[i] == '{', expectKey: body[i] == '{', keys: len(keys)})
		case '}', ']':
			keys = keys[:stack[len(stack)-1].keys]
			stack = stack[:len(stack)-1]
		case ',':
			top := &stack[len(stack)-1]
			top.expectKey = top.object
			top.index++
		case '"':
			j := i + 1
			for body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			text := body[i+1 : j]
			isKey := len(stack) > 0 && stack[len(stack)-1].expectKey
			if isKey {
				top := &stack[len(stack)-1]
				for _, k := range keys[top.keys:] {
					if sameKey(k, text) {
						keys = append(keys, text)
						return &fieldErr{path: scanPath(stack, keys), message: "given twice in one object: JSON keys must be unique (which value is meant?)"}
					}
				}
				keys = append(keys, text)
				top.expectKey = false
			}
			if checkText {
				what := "this string"
				if isKey {
					what = "this key"
				}
				if !utf8.Valid(text) {
					off := i + 1
					for r, n := utf8.DecodeRune(body[off:]); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(body[off:]) {
						off += n
					}
					return &fieldErr{path: scanPath(stack, keys), message: fmt.Sprintf("%s is not UTF-8 (byte 0x%02x at offset %d of the body): send text as UTF-8", what, body[off], off)}
				}
				if hasSurrogateEscape(text) {
					return &fieldErr{path: scanPath(stack, keys), message: what + " holds an escaped lone surrogate (\\uD800-\\uDFFF not in a pair), which is not text: send text as UTF-8"}
				}
			}
			i = j
		}
	}
	return nil
}

// structural marks the bytes scanStrict stops at: brackets, braces,
// commas and quotes.
var structural = [256]bool{'{': true, '}': true, '[': true, ']': true, ',': true, '"': true}

// sameKey says whether two keys as sent are the same string (escapes
// decoded).
func sameKey(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if bytes.IndexByte(a, '\\') < 0 && bytes.IndexByte(b, '\\') < 0 {
		return false
	}
	return keyString(a) == keyString(b)
}

// keyString is a key as sent, its escapes decoded.
func keyString(raw []byte) string {
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// scanPath is the path of the field at the top of stack: each object's
// last key and each array's index.
func scanPath(stack []scanFrame, keys [][]byte) []any {
	var path []any
	for n, f := range stack {
		end := len(keys)
		if n+1 < len(stack) {
			end = stack[n+1].keys
		}
		switch {
		case !f.object:
			path = append(path, f.index)
		case end > f.keys:
			path = append(path, keyString(keys[end-1]))
		}
	}
	return path
}

// hasSurrogateEscape says whether b holds a \u escape of a surrogate
// (D800-DFFF) that is not the first half of a pair followed by its second
// half: a JSON string that is not valid Unicode text.
func hasSurrogateEscape(b []byte) bool {
	for i := 0; i+6 <= len(b); i++ {
		if b[i] != '\\' {
			k := bytes.IndexByte(b[i:], '\\')
			if k < 0 {
				return false
			}
			i += k
			if i+6 > len(b) {
				return false
			}
		}
		if b[i+1] != 'u' { // an escape such as \\ or \n: skip its second byte
			i++
			continue
		}
		r, ok := hex4(b[i+2 : i+6])
		switch {
		case !ok || r < 0xD800 || r > 0xDFFF:
		case r >= 0xDC00: // a second half alone
			return true
		default: // a first half: a second half must follow
			if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
				return true
			}
			if r2, ok := hex4(b[i+8 : i+12]); !ok || r2 < 0xDC00 || r2 > 0xDFFF {
				return true
			}
			i += 6
		}
		i += 5
	}
	return false
}

// hex4 is the value of four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	v, err := strconv.ParseUint(string(b), 16, 32)
	return rune(v), err == nil
}

// maxEcho is the number of bytes of what a client sent (a key, an id, a
// number, a URL path) that a message or a log line repeats.
const maxEcho = 64

// clip is s, or its first n bytes (whole characters) followed by "…" and
// its length when it is longer: a message repeats at most a short
// prefix of what was sent.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

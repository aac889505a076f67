package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Go's HTTP server answers a request it cannot parse (headers over
// MaxHeaderBytes, a malformed request line or header) itself, before any
// handler runs, with a plain-text body written straight to the
// connection. jsonErrorListener's connections recognise that write and
// answer in the server's JSON form instead, with a message naming the
// limit, and log it: every 4xx of the server is then a JSON answer.

// goErrorHeaders is what net/http writes between the status line and the
// body of the answers it writes itself (net/http's server.go); a handler
// of this server never writes it (its answers are application/json).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonErrorListener hands out jsonErrorConns.
type jsonErrorListener struct {
	net.Listener
	s *Server
}

func (l *jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c, s: l.s}, nil
}

// jsonErrorConn is a connection whose writes of net/http's own error
// answers are rewritten as JSON answers.
type jsonErrorConn struct {
	net.Conn
	s *Server
}

// Write passes b on, unless b is one of net/http's own error answers
// ("HTTP/1.1 431 ...", text/plain, Connection: close, in one write),
// which it replaces with the JSON answer for that status.
func (c *jsonErrorConn) Write(b []byte) (int, error) {
	if len(b) < 13 || !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) || (b[9] != '4' && b[9] != '5') {
		return c.Conn.Write(b)
	}
	line, text, ok := bytes.Cut(b, []byte(goErrorHeaders))
	if !ok {
		return c.Conn.Write(b)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return c.Conn.Write(b)
	}
	msg := c.s.rawErrorText(code, string(text))
	body, _ := json.Marshal(errorAnswer{Error: msg, Problems: []fieldProblem{{Message: msg}}, ModelSHA256: c.s.head.ModelSHA256})
	body = append(body, '\n')
	c.s.log.Printf("%s %s - - %d %dB error=%q", c.s.now().UTC().Format(time.RFC3339Nano), c.RemoteAddr(), code, len(body), msg)
	var out bytes.Buffer
	fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Model-SHA256: %s\r\nConnection: close\r\n\r\n",
		code, http.StatusText(code), len(body), c.s.head.ModelSHA256)
	out.Write(body)
	if _, err := c.Conn.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite half-closes the connection when it can, as net/http does
// after a 431 so that the client reads the answer.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rawErrorText is the message of a JSON answer replacing net/http's
// answer text ("431 Request Header Fields Too Large", "400 Bad Request:
// malformed Host header") of status code.
func (s *Server) rawErrorText(code int, text string) string {
	if code == http.StatusRequestHeaderFieldsTooLarge {
		return fmt.Sprintf("the request line and headers are larger than %d bytes (--max-header-bytes): send a shorter URL and fewer or smaller headers", s.cfg.MaxHeaderBytes)
	}
	// text is "400 Bad Request" or "400 Bad Request: why", why being
	// net/http's words (such as "malformed Host header").
	if _, why, ok := strings.Cut(text, ": "); ok {
		return "malformed HTTP request: " + clip(why, maxEcho)
	}
	return fmt.Sprintf("malformed HTTP request (%s): send HTTP/1.1 with a well-formed request line and headers", clip(text, maxEcho))
}

package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxStreamLine bounds one line of a stream (an SSE field or an NDJSON
// object); a provider that sends more is broken.
const maxStreamLine = 32 << 20

// errStreamEnded is a stream that stopped before its final event.
var errStreamEnded = errors.New("the stream ended before the response was complete")

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string // the event: field, "" when absent
	data []byte // the data: fields, joined with "\n"
}

// sseReader reads Server-Sent Events (the WHATWG format): "event:" and
// "data:" fields up to a blank line; comments and id/retry fields skipped.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	sc.Split(scanLines)
	return &sseReader{sc: sc}
}

// next returns the next event with data; io.EOF at the end of the stream.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			hasData = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	// An event without its closing blank line is not dispatched (the
	// stream was cut inside it).
	return sseEvent{}, io.EOF
}

// lineReader reads newline-delimited JSON, skipping blank lines.
type lineReader struct {
	sc *bufio.Scanner
}

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	sc.Split(scanLines)
	return &lineReader{sc: sc}
}

// next returns the next non-blank line; io.EOF at the end.
func (r *lineReader) next() ([]byte, error) {
	for r.sc.Scan() {
		if line := bytes.TrimSpace(r.sc.Bytes()); len(line) > 0 {
			return line, nil
		}
	}
	if err := r.sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// scanLines splits on "\n", "\r\n" or a lone "\r", as SSE allows.
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil // a lone "\r" at the very end
			}
			return 0, nil, nil // need the next byte to tell "\r\n" from "\r"
		}
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errStreamEnded // a line cut before its end
	}
	return 0, nil, nil
}

// exactString is a JSON string decoded byte for byte, for the pieces of a
// stream that are only whole once joined (tool arguments, partial JSON).
// encoding/json turns invalid UTF-8 into U+FFFD, which would ruin a piece
// that ends or starts inside a multi-byte character.
type exactString string

func (s *exactString) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		return nil
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return fmt.Errorf("want a JSON string, got %.20s", raw)
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		*s = exactString(in)
		return nil
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			out = append(out, in[i])
			continue
		}
		i++ // encoding/json checked the string before calling: escapes are whole
		switch in[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(in[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) && i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
				if pair := utf16.DecodeRune(r, hex4(in[i+3:i+7])); pair != utf8.RuneError {
					r = pair
					i += 6
				}
			}
			out = utf8.AppendRune(out, r)
		default: // " \ /
			out = append(out, in[i])
		}
	}
	*s = exactString(out)
	return nil
}

func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}

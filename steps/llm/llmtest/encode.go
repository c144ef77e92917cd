package llmtest

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// bytesString is a string encoded byte for byte: encoding/json would turn
// the invalid UTF-8 of a piece split inside a character into U+FFFD, and
// then no client could reassemble the original bytes.
type bytesString string

// object encodes a JSON object whose keys keep the given order, as the real
// APIs send them (type first). pairs alternate key and value; a value is a
// json.RawMessage (written as is), a bytesString, or anything json.Marshal
// takes.
func object(pairs ...any) json.RawMessage {
	if len(pairs)%2 != 0 {
		panic("llmtest: object needs key, value pairs")
	}
	b := []byte{'{'}
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, pairs[i].(string))
		b = append(b, ':')
		b = appendValue(b, pairs[i+1])
	}
	return append(b, '}')
}

// array encodes a JSON array of values as object takes them.
func array[T any](values ...T) json.RawMessage {
	b := []byte{'['}
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, v)
	}
	return append(b, ']')
}

func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case json.RawMessage:
		if v == nil {
			return append(b, "null"...)
		}
		return append(b, v...)
	case bytesString:
		return appendBytesString(b, string(v))
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			// Only this package's own values get here; a failure is a bug
			// in it, not in a test's script.
			panic(fmt.Sprintf("llmtest: encoding %T: %v", v, err))
		}
		return append(b, enc...)
	}
}

// appendBytesString quotes s as a JSON string, escaping what JSON requires
// and passing every other byte through, valid UTF-8 or not.
func appendBytesString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// rawArgs is Args as a JSON value for the places that carry arguments as an
// object rather than text (Anthropic and Ollama replies). Broken JSON, kept
// for tests of a client's handling of it, travels as a string instead.
func rawArgs(args string) json.RawMessage {
	if args == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return appendBytesString(nil, args)
}

// The frames of the three stream framings.

// sseEvent is a server-sent event with a name, as Anthropic and the OpenAI
// Responses API send them.
func sseEvent(name string, data []byte) []byte {
	b := make([]byte, 0, len(name)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, '\n', '\n')
}

// sseData is a server-sent event without a name, as Chat Completions sends.
func sseData(data []byte) []byte {
	b := make([]byte, 0, len(data)+8)
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, '\n', '\n')
}

// ndjsonLine is one line of Ollama's newline-delimited JSON.
func ndjsonLine(data []byte) []byte {
	return append(append([]byte{}, data...), '\n')
}

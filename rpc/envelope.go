package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/creachadair/jrpc2"
	"github.com/go-json-experiment/json/jsontext"
)

// messageKind is what an inbound line turned out to be.
type messageKind uint8

const (
	kindRequest messageKind = iota + 1
	kindNotification
	kindResponse
)

// envelope is the outer shape of a valid inbound message.
type envelope struct {
	kind   messageKind
	key    idKey  // canonical id; empty for a notification
	method string // empty for a response
}

// rejection is the error reply to a line that never reaches a handler.
type rejection struct {
	id      json.RawMessage // the id as sent, or nil when it is unknown or invalid
	code    jrpc2.Code
	message string
}

// encode renders the rejection as a JSON-RPC error response.
func (r *rejection) encode() []byte {
	id := r.id
	if id == nil {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jrpc2.Error    `json:"error"`
	}{"2.0", id, &jrpc2.Error{Code: r.code, Message: r.message}})
	return out
}

// idKey identifies a request id by value: "s:" and the decoded string, or
// "n:" and the integer's digits. 1 and "1" differ; "1" and "\u0031" do not.
type idKey string

// canonicalID checks a raw JSON id and returns its key. Only strings and
// integers are ids.
func canonicalID(raw []byte) (idKey, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false
		}
		return idKey("s:" + s), true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		digits := raw
		if raw[0] == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
			return "", false
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				return "", false // a fraction or an exponent
			}
		}
		if string(digits) == "0" {
			return "n:0", true // -0 is 0
		}
		return idKey("n:" + string(raw)), true
	}
	return "", false
}

// envelopeDecoder checks the outer shape of each inbound line before jrpc2
// sees it, so that the protocol's rules hold exactly: one object a line, no
// batches, ids that are strings or integers, jsonrpc "2.0".
type envelopeDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

// decode classifies one line. Exactly one of the results is meaningful.
func (d *envelopeDecoder) decode(line []byte) (envelope, *rejection) {
	d.buf.Reset()
	d.buf.Write(line) // *bytes.Buffer is read in place by jsontext
	d.dec.Reset(&d.buf)
	return decodeEnvelope(&d.dec)
}

func decodeEnvelope(dec *jsontext.Decoder) (envelope, *rejection) {
	parseError := func(err error) (envelope, *rejection) {
		return envelope{}, &rejection{code: CodeParseError, message: "parse error: " + err.Error()}
	}
	invalid := func(id json.RawMessage, format string, args ...any) (envelope, *rejection) {
		return envelope{}, &rejection{id: id, code: CodeInvalidRequest, message: "invalid request: " + fmt.Sprintf(format, args...)}
	}

	switch dec.PeekKind() {
	case '{':
	case '[':
		if err := dec.SkipValue(); err != nil {
			return parseError(err)
		}
		if err := expectEnd(dec); err != nil {
			return parseError(err)
		}
		return invalid(nil, "batches are not supported; send one JSON object a line")
	default:
		if _, err := dec.ReadValue(); err != nil {
			return parseError(err)
		}
		if err := expectEnd(dec); err != nil {
			return parseError(err)
		}
		return invalid(nil, "a message must be a JSON object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return parseError(err)
	}

	var (
		rawID                     json.RawMessage
		hasID, idOK               bool
		key                       idKey
		version                   string
		hasMethod, methodIsString bool
		method                    string
		paramsKind                jsontext.Kind
		hasResult, hasError       bool
		unknown                   string
		hasUnknown                bool // the name alone cannot say: "" is a name too
	)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return parseError(err)
		}
		switch member := name.String(); member {
		case "jsonrpc":
			if version, _, err = readString(dec); err != nil {
				return parseError(err)
			}
		case "id":
			v, err := dec.ReadValue()
			if err != nil {
				return parseError(err)
			}
			hasID = true
			rawID = bytes.Clone(v)
			key, idOK = canonicalID(v)
		case "method":
			hasMethod = true
			if method, methodIsString, err = readString(dec); err != nil {
				return parseError(err)
			}
		case "params":
			paramsKind = dec.PeekKind()
			if err := dec.SkipValue(); err != nil {
				return parseError(err)
			}
		case "result":
			hasResult = true
			if err := dec.SkipValue(); err != nil {
				return parseError(err)
			}
		case "error":
			hasError = true
			if err := dec.SkipValue(); err != nil {
				return parseError(err)
			}
		default:
			if !hasUnknown {
				unknown, hasUnknown = member, true
			}
			if err := dec.SkipValue(); err != nil {
				return parseError(err)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return parseError(err)
	}
	if err := expectEnd(dec); err != nil {
		return parseError(err)
	}

	if !hasMethod && (hasResult || hasError) {
		// A reply is never answered, whatever its shape: the channel lets it
		// through only when it matches a request of the runtime's.
		if !idOK {
			key = ""
		}
		return envelope{kind: kindResponse, key: key}, nil
	}
	if hasID && !idOK {
		return invalid(nil, "id must be a string or an integer (omit it for a notification)")
	}
	if version != "2.0" {
		return invalid(rawID, `jsonrpc must be "2.0"`)
	}
	if hasUnknown {
		return invalid(rawID, "unknown member %q; allowed: jsonrpc, id, method, params, result, error", clip(unknown, 64))
	}
	if !hasMethod {
		return invalid(rawID, "method is required")
	}
	switch {
	case !methodIsString:
		return invalid(rawID, "method must be a string")
	case method == "":
		return invalid(rawID, "method must not be empty")
	case hasResult || hasError:
		return invalid(rawID, "a request must not carry result or error")
	case paramsKind != 0 && paramsKind != '{' && paramsKind != '[' && paramsKind != 'n':
		return invalid(rawID, "params must be an object")
	}
	if !hasID {
		return envelope{kind: kindNotification, method: method}, nil
	}
	return envelope{kind: kindRequest, key: key, method: method}, nil
}

// readString reads one value and returns it when it is a string.
func readString(dec *jsontext.Decoder) (string, bool, error) {
	v, err := dec.ReadValue()
	if err != nil || v.Kind() != '"' {
		return "", false, err
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err == nil, err
}

// expectEnd fails when anything but whitespace follows the message.
func expectEnd(dec *jsontext.Decoder) error {
	if _, err := dec.ReadValue(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one JSON value on the line")
		}
		return err
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

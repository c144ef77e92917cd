package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/creachadair/jrpc2"
)

// chunkedReader hands out data in chunks whose sizes cycle through sizes,
// so the fuzzer controls where reads split lines.
type chunkedReader struct {
	data  []byte
	sizes []byte
	n     int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	size := len(r.data)
	if len(r.sizes) > 0 {
		size = 1 + int(r.sizes[r.n%len(r.sizes)])%32
		r.n++
	}
	size = min(size, len(p), len(r.data))
	copy(p, r.data[:size])
	r.data = r.data[size:]
	return size, nil
}

// expectedLines is what LineReader must return for data: the non-blank
// lines without their terminator, up to the first line over max, and then
// the error that ends the reading.
func expectedLines(data []byte, max int) ([][]byte, error) {
	var want [][]byte
	for _, raw := range bytes.Split(data, []byte("\n")) {
		// One byte of slack for the '\r' of a "\r\n" terminator.
		if len(raw) > max && (len(raw) > max+1 || raw[len(raw)-1] != '\r') {
			return want, ErrMessageTooLarge
		}
		line := bytes.TrimRight(raw, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		want = append(want, line)
	}
	return want, io.EOF
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}\n"), uint8(63), []byte{})
	f.Add([]byte("a\nb\r\n\n  \r\nc"), uint8(4), []byte{0, 1, 2})
	f.Add([]byte("0123456789\n0123456789A\n"), uint8(9), []byte{3})
	f.Add([]byte("0123456789\r\n"), uint8(9), []byte{9, 0})
	f.Add([]byte("\r\r\r\n\n\n"), uint8(1), []byte{})
	f.Add([]byte("x\ry\n\xff\xfe\n"), uint8(2), []byte{31})
	f.Add([]byte(""), uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, data []byte, maxSeed uint8, sizes []byte) {
		max := 1 + int(maxSeed)%64
		r := NewLineReader(&chunkedReader{data: data, sizes: sizes}, max)
		want, wantErr := expectedLines(data, max)
		var got [][]byte
		var err error
		for {
			var line []byte
			if line, err = r.ReadLine(); err != nil {
				break
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line %q contains a newline", line)
			}
			if len(line) > max {
				t.Fatalf("line %q has %d bytes, over the limit of %d", line, len(line), max)
			}
			if len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("blank line %q was returned", line)
			}
			got = append(got, line)
			if len(got) > len(data) {
				t.Fatalf("more lines (%d) than input bytes (%d)", len(got), len(data))
			}
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("ReadLine ended with %v, want %v (max %d, input %q)", err, wantErr, max, data)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d lines %q, want %d %q (max %d)", len(got), got, len(want), want, max)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d = %q, want %q (max %d)", i, got[i], want[i], max)
			}
		}
		if errors.Is(err, io.EOF) && !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
			t.Fatal("the lines read do not add up to the non-blank input lines")
		}
	})
}

// envelopeSeeds are the JSON-RPC 2.0 edge cases, also committed under
// testdata/fuzz/FuzzEnvelope.
var envelopeSeeds = []string{
	`[]`,
	`[{"jsonrpc":"2.0","id":1,"method":"initialize"},{"jsonrpc":"2.0","id":2,"method":"shutdown"}]`,
	`{"jsonrpc":"2.0","id":null,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`42`,
	`"x"`,
	`null`,
	`{"jsonrpc":"1.0","id":1,"method":"initialize"}`,
	`{"id":1,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":1,"method":`,
	`{"jsonrpc":"2.0","method":"exit"}`,
	`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"a"}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"decision":"allow"}}`,
	`{"jsonrpc":"2.0","id":"cb","error":{"code":-32603,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":"\u0031","method":"m"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	`{"jsonrpc":"2.0","id":01,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","result":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`,
	`{"jsonrpc":"2.0","":"","method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"} {}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
	``,
}

func FuzzEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	var d envelopeDecoder // reused, as the channel reuses it
	f.Fuzz(func(t *testing.T, line []byte) {
		env, rej := d.decode(line)
		if rej == nil {
			checkAccepted(t, line, env)
		} else {
			checkRejected(t, line, rej)
		}
	})
}

var allowedMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

func checkAccepted(t *testing.T, line []byte, env envelope) {
	t.Helper()
	if !json.Valid(line) {
		t.Fatalf("accepted %q, which is not valid JSON", line)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Fatalf("accepted %q, which is not a JSON object: %v", line, err)
	}

	var version string
	rawID, hasID := msg["id"]
	rawMethod, hasMethod := msg["method"]
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	if env.kind == kindResponse {
		// A reply is never answered, whatever its version or id; its key is
		// the id's when the id is valid, else empty (it matches nothing).
		if hasMethod || env.method != "" || (!hasResult && !hasError) {
			t.Fatalf("accepted %q as a response", line)
		}
		if key, ok := canonicalID(rawID); (ok && key != env.key) || (!ok && env.key != "") {
			t.Fatalf("accepted reply %q with key %q", line, env.key)
		}
		return
	}
	if err := json.Unmarshal(msg["jsonrpc"], &version); err != nil || version != "2.0" {
		t.Fatalf("accepted %q with jsonrpc %s", line, msg["jsonrpc"])
	}
	for name := range msg {
		if !allowedMembers[name] {
			t.Fatalf("accepted %q with the member %q", line, name)
		}
	}
	if params, ok := msg["params"]; ok && !bytes.HasPrefix(params, []byte("{")) &&
		!bytes.HasPrefix(params, []byte("[")) && string(params) != "null" {
		t.Fatalf("accepted %q with params %s", line, params)
	}
	switch env.kind {
	case kindRequest:
		if !hasID {
			t.Fatalf("accepted %q as kind %d without an id", line, env.kind)
		}
		key, ok := canonicalID(rawID)
		if !ok {
			t.Fatalf("accepted %q with the id %s, which is not a string or an integer", line, rawID)
		}
		if key != env.key {
			t.Fatalf("accepted %q with key %q, want %q", line, env.key, key)
		}
	case kindNotification:
		if hasID || env.key != "" {
			t.Fatalf("accepted %q as a notification with an id", line)
		}
	default:
		t.Fatalf("accepted %q with kind %d", line, env.kind)
	}
	{
		var method string
		if !hasMethod || json.Unmarshal(rawMethod, &method) != nil || method == "" || method != env.method {
			t.Fatalf("accepted %q with method %s as %q", line, rawMethod, env.method)
		}
		if hasResult || hasError {
			t.Fatalf("accepted %q as a request with a result or an error", line)
		}
	}
}

func checkRejected(t *testing.T, line []byte, rej *rejection) {
	t.Helper()
	out := rej.encode()
	if !json.Valid(out) || bytes.IndexByte(out, '\n') >= 0 {
		t.Fatalf("the rejection of %q encodes as %q, not one line of JSON", line, out)
	}
	var reply struct {
		Version *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jrpc2.Error    `json:"error"`
	}
	if err := json.Unmarshal(out, &reply); err != nil {
		t.Fatalf("the rejection of %q encodes as %q: %v", line, out, err)
	}
	if reply.Version == nil || *reply.Version != "2.0" || reply.Error == nil || reply.Error.Message == "" {
		t.Fatalf("the rejection of %q encodes as %q", line, out)
	}
	switch reply.Error.Code {
	case CodeParseError:
		if string(reply.ID) != "null" {
			t.Fatalf("a parse error of %q answers with the id %s, want null", line, reply.ID)
		}
	case CodeInvalidRequest:
	default:
		t.Fatalf("the rejection of %q has the code %d, want -32700 or -32600", line, reply.Error.Code)
	}
	if !json.Valid(line) && reply.Error.Code != CodeParseError {
		t.Fatalf("%q is not valid JSON but was answered with %d", line, reply.Error.Code)
	}
	if string(reply.ID) == "null" {
		return
	}
	// An echoed id is a valid id, and the one the message carried.
	key, ok := canonicalID(reply.ID)
	if !ok {
		t.Fatalf("the rejection of %q echoes the invalid id %s", line, reply.ID)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Fatalf("the rejection of %q echoes an id from a line that is not a JSON object: %v", line, err)
	}
	if sent, _ := canonicalID(msg["id"]); sent != key {
		t.Fatalf("the rejection of %q echoes the id %s, but the message's id is %s", line, reply.ID, msg["id"])
	}
}

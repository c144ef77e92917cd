package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/creachadair/jrpc2"
)

func TestDecodeEnvelope(t *testing.T) {
	t.Parallel()
	type want struct {
		kind   messageKind // zero when rejected
		key    idKey
		method string
		code   jrpc2.Code // set when rejected
		id     string     // the id the rejection echoes; "" means null
		msg    string     // a substring of the rejection's message
	}
	tests := []struct {
		name string
		line string
		want want
	}{
		// Accepted messages.
		{"a request with an integer id is a request", `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, want{kind: kindRequest, key: "n:1", method: "m"}},
		{"a request with a string id is a request", `{"jsonrpc":"2.0","id":"a","method":"m"}`, want{kind: kindRequest, key: "s:a", method: "m"}},
		{"a request with members in any order is a request", `{"method":"m","params":{"x":[1]},"id":7,"jsonrpc":"2.0"}`, want{kind: kindRequest, key: "n:7", method: "m"}},
		{"a request with null params is a request", `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, want{kind: kindRequest, key: "n:1", method: "m"}},
		{"a request with array params is left for the params decoder", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`, want{kind: kindRequest, key: "n:1", method: "m"}},
		{"a request surrounded by whitespace is a request", " \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \t", want{kind: kindRequest, key: "n:1", method: "m"}},
		{"a method with escapes is decoded", `{"jsonrpc":"2.0","id":1,"method":"\u0024/cancelRequest"}`, want{kind: kindRequest, key: "n:1", method: "$/cancelRequest"}},
		{"a message without an id is a notification", `{"jsonrpc":"2.0","method":"exit"}`, want{kind: kindNotification, method: "exit"}},
		{"a notification may carry params", `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`, want{kind: kindNotification, method: "$/cancelRequest"}},
		{"a message with an id and a result is a response", `{"jsonrpc":"2.0","id":3,"result":{"decision":"allow"}}`, want{kind: kindResponse, key: "n:3"}},
		{"a message with an id and an error is a response", `{"jsonrpc":"2.0","id":"cb-1","error":{"code":-1,"message":"no"}}`, want{kind: kindResponse, key: "s:cb-1"}},
		{"a response with a null result is a response", `{"jsonrpc":"2.0","id":3,"result":null}`, want{kind: kindResponse, key: "n:3"}},

		// Batches and non-objects.
		{"an empty batch is refused with a null id", `[]`, want{code: CodeInvalidRequest, msg: "batches are not supported"}},
		{"a batch of two requests is refused with a null id", `[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":2,"method":"m"}]`, want{code: CodeInvalidRequest, msg: "batches are not supported"}},
		{"a batch with broken JSON is a parse error", `[{"jsonrpc":"2.0",]`, want{code: CodeParseError, msg: "parse error"}},
		{"a number is not a message", `42`, want{code: CodeInvalidRequest, msg: "must be a JSON object"}},
		{"a string is not a message", `"x"`, want{code: CodeInvalidRequest, msg: "must be a JSON object"}},
		{"null is not a message", `null`, want{code: CodeInvalidRequest, msg: "must be a JSON object"}},
		{"true is not a message", `true`, want{code: CodeInvalidRequest, msg: "must be a JSON object"}},

		// Syntax.
		{"invalid JSON is a parse error", `{"jsonrpc":"2.0","id":1,"method":}`, want{code: CodeParseError, msg: "parse error"}},
		{"a truncated object is a parse error", `{"jsonrpc":"2.0","id":1`, want{code: CodeParseError}},
		{"a bare word is a parse error", `hello`, want{code: CodeParseError}},
		{"a trailing comma is a parse error", `{"jsonrpc":"2.0","method":"m",}`, want{code: CodeParseError}},
		{"invalid UTF-8 is a parse error", "{\"jsonrpc\":\"2.0\",\"method\":\"m\xff\"}", want{code: CodeParseError}},
		{"a duplicate member is a parse error", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, want{code: CodeParseError}},
		{"trailing data after the object is a parse error", `{"jsonrpc":"2.0","id":1,"method":"m"} x`, want{code: CodeParseError}},
		{"a second object on the line is a parse error", `{"jsonrpc":"2.0","id":1,"method":"m"}{"jsonrpc":"2.0","id":2,"method":"m"}`, want{code: CodeParseError, msg: "more than one JSON value"}},
		{"trailing data after a batch is a parse error", `[] 1`, want{code: CodeParseError}},
		{"trailing data after a non-object is a parse error", `42 43`, want{code: CodeParseError}},

		// Ids.
		{"a negative integer id is an id", `{"jsonrpc":"2.0","id":-5,"method":"m"}`, want{kind: kindRequest, key: "n:-5", method: "m"}},
		{"an integer id beyond 64 bits is an id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}`, want{kind: kindRequest, key: "n:123456789012345678901234567890", method: "m"}},
		{"an empty string id is an id", `{"jsonrpc":"2.0","id":"","method":"m"}`, want{kind: kindRequest, key: "s:", method: "m"}},
		{"an escaped string id has the key of its decoded value", `{"jsonrpc":"2.0","id":"\u0031","method":"m"}`, want{kind: kindRequest, key: "s:1", method: "m"}},
		{"a fractional id is refused with a null id", `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"an exponent id is refused with a null id", `{"jsonrpc":"2.0","id":1e3,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"an integral id with a fraction part is refused", `{"jsonrpc":"2.0","id":1.0,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"a boolean id is refused with a null id", `{"jsonrpc":"2.0","id":true,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"an object id is refused with a null id", `{"jsonrpc":"2.0","id":{},"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"an array id is refused with a null id", `{"jsonrpc":"2.0","id":[],"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"a null id is refused with a null id", `{"jsonrpc":"2.0","id":null,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be a string or an integer"}},
		{"a bad id is reported before a bad version", `{"jsonrpc":"1.0","id":1.5,"method":"m"}`, want{code: CodeInvalidRequest, msg: "id must be"}},

		// Version.
		{"a missing jsonrpc is refused with the id echoed", `{"id":1,"method":"m"}`, want{code: CodeInvalidRequest, id: `1`, msg: `jsonrpc must be "2.0"`}},
		{"jsonrpc 1.0 is refused with the id echoed", `{"jsonrpc":"1.0","id":"a","method":"m"}`, want{code: CodeInvalidRequest, id: `"a"`, msg: `jsonrpc must be "2.0"`}},
		{"jsonrpc as a number is refused", `{"jsonrpc":2.0,"id":1,"method":"m"}`, want{code: CodeInvalidRequest, id: `1`, msg: `jsonrpc must be "2.0"`}},
		{"a bad version on a notification is refused with a null id", `{"jsonrpc":"2","method":"m"}`, want{code: CodeInvalidRequest, msg: `jsonrpc must be "2.0"`}},
		{"the id is echoed as sent", `{"jsonrpc":"1.0","id":"\u0031","method":"m"}`, want{code: CodeInvalidRequest, id: `"\u0031"`}},

		// Method.
		{"an id alone is refused with the id echoed", `{"jsonrpc":"2.0","id":1}`, want{code: CodeInvalidRequest, id: `1`, msg: "method is required"}},
		{"a version alone is refused", `{"jsonrpc":"2.0"}`, want{code: CodeInvalidRequest, msg: "method is required"}},
		{"a result without an id is a reply never answered", `{"jsonrpc":"2.0","result":1}`, want{kind: kindResponse}},
		{"an error reply with a null id is never answered", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, want{kind: kindResponse}},
		{"a reply with a fractional id is never answered", `{"jsonrpc":"2.0","id":1.5,"result":true}`, want{kind: kindResponse}},
		{"a numeric method is refused", `{"jsonrpc":"2.0","id":1,"method":5}`, want{code: CodeInvalidRequest, id: `1`, msg: "method must be a string"}},
		{"a null method is refused", `{"jsonrpc":"2.0","id":1,"method":null}`, want{code: CodeInvalidRequest, id: `1`, msg: "method must be a string"}},
		{"an object method is refused", `{"jsonrpc":"2.0","method":{"a":1}}`, want{code: CodeInvalidRequest, msg: "method must be a string"}},
		{"an empty method is refused", `{"jsonrpc":"2.0","id":1,"method":""}`, want{code: CodeInvalidRequest, id: `1`, msg: "method must not be empty"}},
		{"a method with a result is refused", `{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`, want{code: CodeInvalidRequest, id: `1`, msg: "must not carry result or error"}},
		{"a method with an error is refused", `{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1}}`, want{code: CodeInvalidRequest, id: `1`, msg: "must not carry result or error"}},

		// Params and other members.
		{"string params are refused", `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, want{code: CodeInvalidRequest, id: `1`, msg: "params must be an object"}},
		{"numeric params are refused", `{"jsonrpc":"2.0","id":1,"method":"m","params":3}`, want{code: CodeInvalidRequest, id: `1`, msg: "params must be an object"}},
		{"boolean params are refused", `{"jsonrpc":"2.0","method":"m","params":false}`, want{code: CodeInvalidRequest, msg: "params must be an object"}},
		{"an unknown member is refused with the id echoed", `{"jsonrpc":"2.0","id":1,"method":"m","extra":true}`, want{code: CodeInvalidRequest, id: `1`, msg: `unknown member "extra"`}},
		{"an unknown member with an empty name is refused", `{"jsonrpc":"2.0","id":1,"":"","method":"m"}`, want{code: CodeInvalidRequest, id: `1`, msg: `unknown member ""`}},
		{"member names match case exactly", `{"jsonrpc":"2.0","id":1,"Method":"m"}`, want{code: CodeInvalidRequest, id: `1`, msg: `unknown member "Method"`}},
		{"a long unknown member name is clipped", `{"jsonrpc":"2.0","id":1,"method":"m","` + strings.Repeat("k", 100) + `":1}`, want{code: CodeInvalidRequest, id: `1`, msg: strings.Repeat("k", 64) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d envelopeDecoder
			env, rej := d.decode([]byte(tt.line))
			if tt.want.code == 0 {
				if rej != nil {
					t.Fatalf("rejected with %d %q, want accepted", rej.code, rej.message)
				}
				got := want{kind: env.kind, key: env.key, method: env.method}
				if got != tt.want {
					t.Fatalf("envelope = %+v, want %+v", got, tt.want)
				}
				return
			}
			if rej == nil {
				t.Fatalf("accepted as %+v, want rejected with %d", env, tt.want.code)
			}
			if rej.code != tt.want.code {
				t.Errorf("code = %d (%q), want %d", rej.code, rej.message, tt.want.code)
			}
			if string(rej.id) != tt.want.id {
				t.Errorf("id = %q, want %q", rej.id, tt.want.id)
			}
			if !strings.Contains(rej.message, tt.want.msg) {
				t.Errorf("message = %q, want it to contain %q", rej.message, tt.want.msg)
			}
		})
	}
}

func TestEnvelopeIDKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"an integer and the same digits as a string are different ids", `1`, `"1"`, false},
		{"a string and its escaped spelling are the same id", `"1"`, `"\u0031"`, true},
		{"negative zero and zero are the same id", `-0`, `0`, true},
		{"different integers are different ids", `1`, `2`, false},
		{"a negative and a positive integer are different ids", `-1`, `1`, false},
		{"the string n:1 is not the integer 1", `"n:1"`, `1`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d envelopeDecoder
			keyOf := func(id string) idKey {
				env, rej := d.decode([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"m"}`))
				if rej != nil {
					t.Fatalf("id %s rejected: %s", id, rej.message)
				}
				return env.key
			}
			ka, kb := keyOf(tt.a), keyOf(tt.b)
			if (ka == kb) != tt.same {
				t.Fatalf("keys %q and %q: same = %v, want %v", ka, kb, ka == kb, tt.same)
			}
		})
	}
}

func TestEnvelopeDecoderIsReusable(t *testing.T) {
	t.Parallel()
	var d envelopeDecoder
	lines := []struct {
		line string
		key  idKey // empty when the line is rejected
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a"}`, "n:1"},
		{`{"jsonrpc":"2.0","id":`, ""},
		{`[]`, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"b"}`, "n:2"},
	}
	for i, l := range lines {
		env, rej := d.decode([]byte(l.line))
		if (rej == nil) != (l.key != "") {
			t.Fatalf("line %d %s: accepted = %v, want %v", i, l.line, rej == nil, l.key != "")
		}
		if env.key != l.key {
			t.Fatalf("line %d: key = %q, want %q; state leaked from an earlier line", i, env.key, l.key)
		}
	}
}

func TestCanonicalID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		key  idKey
		ok   bool
	}{
		{"zero is an integer id", `0`, "n:0", true},
		{"negative zero is zero", `-0`, "n:0", true},
		{"a positive integer keeps its digits", `42`, "n:42", true},
		{"a negative integer keeps its sign", `-42`, "n:-42", true},
		{"a string is keyed by its decoded value", `"a\"b"`, `s:a"b`, true},
		{"an escaped string is keyed by its decoded value", `"\u0061"`, "s:a", true},
		{"leading zeros are not an integer", `01`, "", false},
		{"negative leading zeros are not an integer", `-01`, "", false},
		{"a minus sign alone is not an integer", `-`, "", false},
		{"a fraction is not an integer", `1.5`, "", false},
		{"a zero fraction is not an integer", `1.0`, "", false},
		{"an exponent is not an integer", `1e3`, "", false},
		{"a capital exponent is not an integer", `1E3`, "", false},
		{"null is not an id", `null`, "", false},
		{"a boolean is not an id", `true`, "", false},
		{"an object is not an id", `{}`, "", false},
		{"an array is not an id", `[]`, "", false},
		{"nothing is not an id", ``, "", false},
		{"an unterminated string is not an id", `"abc`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key, ok := canonicalID([]byte(tt.raw))
			if key != tt.key || ok != tt.ok {
				t.Fatalf("canonicalID(%s) = %q, %v; want %q, %v", tt.raw, key, ok, tt.key, tt.ok)
			}
		})
	}
}

func TestRejectionEncode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rej    rejection
		wantID string
	}{
		{"an unknown id is encoded as null", rejection{code: CodeParseError, message: "parse error: x"}, `null`},
		{"an integer id is echoed", rejection{id: json.RawMessage(`7`), code: CodeInvalidRequest, message: "bad"}, `7`},
		{"a string id is echoed as sent", rejection{id: json.RawMessage(`"\u0031"`), code: CodeInvalidRequest, message: "bad"}, `"\u0031"`},
		{"a message with quotes and control characters stays valid JSON", rejection{code: CodeInvalidRequest, message: "bad \"x\"\n\t\x01"}, `null`},
		{"a message clipped inside a rune stays valid JSON", rejection{code: CodeInvalidRequest, message: "é"[:1]}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := tt.rej.encode()
			if !json.Valid(out) {
				t.Fatalf("encode() = %q, not valid JSON", out)
			}
			var got struct {
				Version string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got.Version != "2.0" {
				t.Errorf("jsonrpc = %q, want 2.0", got.Version)
			}
			if string(got.ID) != tt.wantID {
				t.Errorf("id = %s, want %s", got.ID, tt.wantID)
			}
			if got.Error.Code != int(tt.rej.code) {
				t.Errorf("error.code = %d, want %d", got.Error.Code, tt.rej.code)
			}
			if strings.Contains(string(out), "\n") {
				t.Errorf("encode() = %q spans more than one line", out)
			}
		})
	}
}

func TestRejectionOfADecodedLineEncodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		line   string
		wantID string
	}{
		{"a parse error answers with a null id", `{"jsonrpc":`, `null`},
		{"an empty batch answers with a null id", `[]`, `null`},
		{"a bad id answers with a null id", `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, `null`},
		{"a bad version answers with the id", `{"jsonrpc":"1.0","id":"x","method":"m"}`, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d envelopeDecoder
			_, rej := d.decode([]byte(tt.line))
			if rej == nil {
				t.Fatal("accepted, want rejected")
			}
			var got struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(rej.encode(), &got); err != nil {
				t.Fatalf("encode() = %q: %v", rej.encode(), err)
			}
			if string(got.ID) != tt.wantID {
				t.Fatalf("id = %s, want %s", got.ID, tt.wantID)
			}
		})
	}
}

// Package jsonpath names the place and the nature of a fault found while
// decoding JSON with github.com/go-json-experiment/json, in the words the
// runtime's error messages use: a field path (steps[0].id) and a JSON kind
// ("a string", "an integer").
//
// It imports nothing of the project, so that both workflow (plans) and rpc
// (params) describe faults the same way.
package jsonpath

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Path renders JSON pointer tokens as a field path: steps, 0, id is
// steps[0].id.
func Path(tokens []string) string {
	var b strings.Builder
	for _, tok := range tokens {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// Tokens splits a JSON pointer into its tokens.
func Tokens(p jsontext.Pointer) []string {
	var out []string
	for tok := range p.Tokens() {
		out = append(out, tok)
	}
	return out
}

// KindName names the kind of a JSON value: "a string", "an object", ...
func KindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an invalid value"
}

// TypeName names the JSON kind a Go type takes: "an integer" for an int.
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a valid value"
}

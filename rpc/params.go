package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/task-x/runtime/workflow/jsonpath"
)

// Validator is implemented by params types with rules beyond their JSON
// shape. The error's message names the field and the rule.
type Validator interface {
	Validate() error
}

// SecretTag marks a string field whose value must never reach a log:
// `secret:"true"`. DecodeParams registers such values with the redactor.
const SecretTag = "secret"

// DecodeParams decodes a method's params into v, strictly: params must be an
// object (absent or null means {}), member names match exactly, unknown
// members and wrong types fail, and v's Validate runs last. Every failure is
// a -32602 error whose message names the field. Fields that exist only for
// older clients are declared in v and ignored by the handler.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return invalidParams("params: must be an object")
	}
	if err := jsonv2.Unmarshal(raw, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return invalidParams("%s", describeDecodeError(err))
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			return invalidParams("%s", err.Error())
		}
	}
	return nil
}

// describeDecodeError turns a decoding error into "field: rule" without
// quoting the offending value (it may be a secret).
func describeDecodeError(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		field := fieldPath(se.JSONPointer)
		switch {
		case errors.Is(err, jsonv2.ErrUnknownName):
			return field + ": unknown field"
		case se.GoType != nil && se.JSONKind != 0:
			want, got := jsonpath.TypeName(se.GoType), jsonpath.KindName(se.JSONKind)
			if got == "a number" && (want == "an integer" || want == "a number") {
				return fmt.Sprintf("%s: expected %s, got a number with a fraction or out of range", field, want)
			}
			return fmt.Sprintf("%s: expected %s, got %s", field, want, got)
		}
		return field + ": invalid value"
	}
	var sx *jsontext.SyntacticError
	if errors.As(err, &sx) {
		field := fieldPath(sx.JSONPointer)
		if errors.Is(err, jsontext.ErrDuplicateName) {
			return field + ": duplicate field"
		}
		return fmt.Sprintf("params: invalid JSON at byte %d", sx.ByteOffset)
	}
	return "params: " + err.Error()
}

// fieldPath renders a JSON pointer as a field path: /steps/0/id is
// steps[0].id; the empty pointer is params.
func fieldPath(p jsontext.Pointer) string {
	if p == "" {
		return "params"
	}
	return jsonpath.Path(jsonpath.Tokens(p))
}

// secretsOf returns the values of the `secret:"true"` string fields in v,
// at any depth of structs, pointers and slices.
func secretsOf(v any) []string {
	var out []string
	var walk func(reflect.Value)
	walk = func(rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !rv.IsNil() {
				walk(rv.Elem())
			}
		case reflect.Slice, reflect.Array:
			if rv.Type().Elem().Kind() == reflect.Uint8 {
				return // raw JSON and bytes hold no tagged fields
			}
			for i := range rv.Len() {
				walk(rv.Index(i))
			}
		case reflect.Struct:
			t := rv.Type()
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				if f.Tag.Get(SecretTag) == "true" && f.Type.Kind() == reflect.String {
					if s := rv.Field(i).String(); s != "" {
						out = append(out, s)
					}
					continue
				}
				walk(rv.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}

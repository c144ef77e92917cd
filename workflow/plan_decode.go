package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/task-x/runtime/workflow/jsonpath"
)

// The fields a plan and a plan step take, for the message about an unknown
// one.
const (
	planFields = "steps, merge"
	stepFields = "id, role, objective, context, dependsOn"
)

// DecodePlan decodes a plan strictly: the input must be one JSON object,
// member names match exactly, and unknown fields, duplicate fields and
// wrong types are refused with an *InvalidInputError whose Path is the
// JSON path of the fault. It does not check the plan's rules (Check does).
func DecodePlan(data []byte) (*Plan, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, invalid("", "", "the plan is empty; a plan is a JSON object { \"steps\": [...], \"merge\"?: bool }")
	}
	var p Plan
	if err := jsonv2.Unmarshal(data, &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, decodeError(data, err)
	}
	return &p, nil
}

// decodeError maps a decoding error to an InvalidInputError that names the
// step and the field. It is the workflow package's own small version of
// what rpc does for params: workflow imports nothing of the project.
func decodeError(data []byte, err error) *InvalidInputError {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		at := locate(data, se.JSONPointer)
		switch {
		case errors.Is(err, jsonv2.ErrUnknownName):
			fields := planFields
			if at.step >= 0 {
				fields = stepFields
			}
			return at.invalid("unknown field %q; %s takes %s", at.last, at.owner(), fields)
		case se.GoType != nil && se.JSONKind != 0:
			return at.invalid("%s must be %s, got %s", at.subject(), jsonpath.TypeName(se.GoType), jsonpath.KindName(se.JSONKind))
		}
		return at.invalid("%s has an invalid value", at.subject())
	}
	var sx *jsontext.SyntacticError
	if errors.As(err, &sx) {
		if errors.Is(err, jsontext.ErrDuplicateName) {
			at := locate(data, sx.JSONPointer)
			return at.invalid("field %q appears twice", at.last)
		}
		line, col := lineCol(data, sx.ByteOffset)
		reason := "malformed"
		if sx.Err != nil {
			reason = sx.Err.Error()
		}
		return invalid("", "", "the plan is not valid JSON: line %d, column %d: %s", line, col, reason)
	}
	return invalid("", "", "the plan cannot be read: %v", err)
}

// location is where in a plan a decoding fault lies.
type location struct {
	path string // steps[2].dependsOn[0]; empty for the whole plan
	step int    // the index of the step, or -1
	id   string // that step's id when it has a string one
	rel  string // the path inside the step (dependsOn[0]), or the whole path
	last string // the last token of the pointer: the field's name
}

// locate resolves a JSON pointer against the raw plan.
func locate(data []byte, ptr jsontext.Pointer) location {
	at := location{step: -1}
	var tokens []string
	for tok := range ptr.Tokens() {
		tokens = append(tokens, tok)
	}
	at.path = jsonpath.Path(tokens)
	at.rel = at.path
	if len(tokens) > 0 {
		at.last = tokens[len(tokens)-1]
	}
	if len(tokens) >= 2 && tokens[0] == "steps" {
		if i, err := strconv.Atoi(tokens[1]); err == nil {
			at.step = i
			at.id = stepIDAt(data, i)
			at.rel = jsonpath.Path(tokens[2:])
		}
	}
	return at
}

// invalid builds the error at this location, prefixing the message with
// the step's name.
func (at location) invalid(format string, args ...any) *InvalidInputError {
	msg := fmt.Sprintf(format, args...)
	if at.step >= 0 {
		msg = stepName(at.step, at.id) + ": " + msg
	}
	return invalid(at.id, at.path, "%s", msg)
}

// subject names the faulty value in a message.
func (at location) subject() string {
	switch {
	case at.path == "":
		return "the plan"
	case at.step >= 0 && at.rel == "":
		return "a step"
	}
	return at.rel
}

// owner names what holds an unknown field.
func (at location) owner() string {
	if at.step >= 0 {
		return "a step"
	}
	return "a plan"
}

// stepIDAt reads the id of steps[i] leniently, so that an error about a
// step that failed to decode can still name it.
func stepIDAt(data []byte, i int) string {
	var v map[string]any
	if jsonv2.Unmarshal(data, &v, jsontext.AllowDuplicateNames(true)) != nil {
		return ""
	}
	steps, _ := v["steps"].([]any)
	if i < 0 || i >= len(steps) {
		return ""
	}
	step, _ := steps[i].(map[string]any)
	id, _ := step["id"].(string)
	return id
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

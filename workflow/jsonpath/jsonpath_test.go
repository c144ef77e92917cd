package jsonpath

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestPathsAndNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pointer jsontext.Pointer
		want    string
	}{
		{"/steps/0/id", "steps[0].id"},
		{"/clientInfo/name", "clientInfo.name"},
		{"/a~1b/2", "a/b[2]"},
		{"/0", "0"},
		{"", ""},
	} {
		if got := Path(Tokens(tc.pointer)); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.pointer, got, tc.want)
		}
	}
	var n *int
	if TypeName(reflect.TypeOf(n)) != "an integer" || TypeName(reflect.TypeOf([]string{})) != "an array" ||
		TypeName(reflect.TypeOf(1.5)) != "a number" || KindName('"') != "a string" || KindName('t') != "a boolean" {
		t.Fatal("kind names are wrong")
	}
}

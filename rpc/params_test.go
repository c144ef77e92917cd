package rpc

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/creachadair/jrpc2"
)

// planParams has arrays of objects, so errors inside them need an index.
type planParams struct {
	Steps []planStep `json:"steps"`
	Merge *bool      `json:"merge,omitempty"`
}

type planStep struct {
	ID        string   `json:"id"`
	DependsOn []string `json:"dependsOn,omitempty"`
	Limits    *struct {
		MaxParallel int `json:"maxParallel"`
	} `json:"limits,omitempty"`
}

func TestDecodeParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		into    func() any
		wantErr string // empty when the params decode
	}{
		{"absent params are an empty object", ``, func() any { return new(noParams) }, ""},
		{"null params are an empty object", `null`, func() any { return new(noParams) }, ""},
		{"an empty object is accepted where no params are taken", `{}`, func() any { return new(noParams) }, ""},
		{"absent params still run Validate", ``, func() any { return new(InitializeParams) }, "protocolVersion: required"},
		{"array params are refused", `[1]`, func() any { return new(noParams) }, "params: must be an object"},
		{"string params are refused", `"x"`, func() any { return new(noParams) }, "params: must be an object"},
		{"numeric params are refused", `1`, func() any { return new(InitializeParams) }, "params: must be an object"},
		{"a member where none is taken is an unknown field", `{"x":1}`, func() any { return new(noParams) }, "x: unknown field"},
		{"valid initialize params decode", `{"protocolVersion":1,"clientInfo":{"name":"task-x-vscode","version":"0.1.0"},"sandbox":false}`, func() any { return new(InitializeParams) }, ""},
		{"an unknown top-level field is named", `{"protocolVersion":1,"colour":"red"}`, func() any { return new(InitializeParams) }, "colour: unknown field"},
		{"an unknown nested field is named by its dotted path", `{"protocolVersion":1,"clientInfo":{"nam":"x"}}`, func() any { return new(InitializeParams) }, "clientInfo.nam: unknown field"},
		{"an unknown field inside an array element is named with its index", `{"steps":[{"id":"a"},{"id":"b","x":1}]}`, func() any { return new(planParams) }, "steps[1].x: unknown field"},
		{"an unknown field deep in an array element is named with its full path", `{"steps":[{"id":"a","limits":{"maxParallel":2,"max":3}}]}`, func() any { return new(planParams) }, "steps[0].limits.max: unknown field"},
		{"a wrong type inside a nested array is named with both indexes", `{"steps":[{"id":"a"},{"id":"b","dependsOn":["a",2]}]}`, func() any { return new(planParams) }, "steps[1].dependsOn[1]: expected a string, got a number"},
		{"a string for an integer is a wrong type", `{"protocolVersion":"1"}`, func() any { return new(InitializeParams) }, "protocolVersion: expected an integer, got a string"},
		{"a boolean for a string is a wrong type", `{"protocolVersion":1,"dataDir":true}`, func() any { return new(InitializeParams) }, "dataDir: expected a string, got a boolean"},
		{"a string for an object is a wrong type", `{"protocolVersion":1,"clientInfo":"vscode"}`, func() any { return new(InitializeParams) }, "clientInfo: expected an object, got a string"},
		{"an object for an array is a wrong type", `{"steps":{}}`, func() any { return new(planParams) }, "steps: expected an array, got an object"},
		{"a fraction for an integer is refused", `{"protocolVersion":1.5}`, func() any { return new(InitializeParams) }, "protocolVersion: expected an integer, got a number with a fraction or out of range"},
		{"an integer out of range is refused", `{"protocolVersion":1e400}`, func() any { return new(InitializeParams) }, "protocolVersion: expected an integer"},
		{"field names match case exactly", `{"ProtocolVersion":1}`, func() any { return new(InitializeParams) }, "ProtocolVersion: unknown field"},
		{"a duplicate field is refused", `{"protocolVersion":1,"protocolVersion":1}`, func() any { return new(InitializeParams) }, "protocolVersion: duplicate field"},
		{"a null for an optional field leaves it unset", `{"protocolVersion":1,"clientInfo":null}`, func() any { return new(InitializeParams) }, ""},
		{"Validate runs after decoding", `{"protocolVersion":1,"dataDir":"relative/dir"}`, func() any { return new(InitializeParams) }, "dataDir: must be an absolute path"},
		{"Validate sees nested values", `{"protocolVersion":1,"clientInfo":{"name":""}}`, func() any { return new(InitializeParams) }, "clientInfo.name: required when clientInfo is given"},
		{"Validate of another params type surfaces too", `{"ms":-1}`, func() any { return new(SleepParams) }, "ms: must be 0 to 600000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := DecodeParams(json.RawMessage(tt.raw), tt.into())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeParams(%s) = %v, want nil", tt.raw, err)
				}
				return
			}
			var je *jrpc2.Error
			if !errors.As(err, &je) {
				t.Fatalf("DecodeParams(%s) = %#v, want a *jrpc2.Error", tt.raw, err)
			}
			if je.Code != CodeInvalidParams {
				t.Errorf("code = %d, want %d", je.Code, CodeInvalidParams)
			}
			if !strings.HasPrefix(je.Message, tt.wantErr) {
				t.Errorf("message = %q, want it to start with %q", je.Message, tt.wantErr)
			}
		})
	}
}

func TestDecodeParamsFillsTheValue(t *testing.T) {
	t.Parallel()
	var p InitializeParams
	raw := `{"protocolVersion":1,"clientInfo":{"name":"task-x-vscode","version":"0.1.0"},"dataDir":"/tmp/x","sandbox":false}`
	if err := DecodeParams(json.RawMessage(raw), &p); err != nil {
		t.Fatal(err)
	}
	if p.ProtocolVersion == nil || *p.ProtocolVersion != 1 || p.ClientInfo == nil || p.ClientInfo.Name != "task-x-vscode" ||
		p.ClientInfo.Version != "0.1.0" || p.DataDir != "/tmp/x" || p.Sandbox == nil || *p.Sandbox {
		t.Fatalf("decoded %+v (clientInfo %+v)", p, p.ClientInfo)
	}
}

// credentials is a params type with secrets at several depths.
type credentials struct {
	APIKey   string            `json:"apiKey" secret:"true"`
	Name     string            `json:"name"`
	Provider *providerSecret   `json:"provider,omitempty"`
	Fallback []providerSecret  `json:"fallback,omitempty"`
	Routes   []*providerSecret `json:"routes,omitempty"`
	Token    apiToken          `json:"token,omitempty" secret:"true"`
	Count    int               `json:"count,omitempty" secret:"true"` // not a string: never a secret
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Any      any               `json:"-"`
	hidden   string            `secret:"true"`
}

type apiToken string

type providerSecret struct {
	Kind   string `json:"kind"`
	APIKey string `json:"apiKey,omitempty" secret:"true"`
}

func TestSecretsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"a nil pointer has no secrets", (*credentials)(nil), nil},
		{"a value without tagged fields has no secrets", &InitializeParams{DataDir: "/x"}, nil},
		{"a top-level secret is found", &credentials{APIKey: "sk-top", Name: "visible"}, []string{"sk-top"}},
		{"a secret of a named string type is found", &credentials{Token: "tok-123"}, []string{"tok-123"}},
		{"a secret behind a pointer is found", &credentials{Provider: &providerSecret{Kind: "anthropic", APIKey: "sk-ptr"}}, []string{"sk-ptr"}},
		{"secrets in a slice of structs are found", &credentials{Fallback: []providerSecret{{APIKey: "sk-a"}, {Kind: "ollama"}, {APIKey: "sk-b"}}}, []string{"sk-a", "sk-b"}},
		{"secrets in a slice of pointers are found", &credentials{Routes: []*providerSecret{nil, {APIKey: "sk-route"}}}, []string{"sk-route"}},
		{"a secret inside an interface is found", &credentials{Any: &providerSecret{APIKey: "sk-iface"}}, []string{"sk-iface"}},
		{"empty secrets are left out", &credentials{APIKey: "", Provider: &providerSecret{}}, nil},
		{"an unexported tagged field is ignored", &credentials{hidden: "sk-hidden"}, nil},
		{"a tagged non-string field is ignored", &credentials{Count: 42}, nil},
		{"raw JSON is not searched", &credentials{Raw: json.RawMessage(`{"apiKey":"sk-raw"}`)}, nil},
		{"a struct passed by value is searched", credentials{APIKey: "sk-value"}, []string{"sk-value"}},
		{"every depth is searched at once", &credentials{
			APIKey:   "sk-1",
			Provider: &providerSecret{APIKey: "sk-2"},
			Fallback: []providerSecret{{APIKey: "sk-3"}},
			Routes:   []*providerSecret{{APIKey: "sk-4"}},
		}, []string{"sk-1", "sk-2", "sk-3", "sk-4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := secretsOf(tt.v)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("secretsOf = %q, want %q", got, want)
			}
		})
	}
}

func TestSecretsOfDecodedParams(t *testing.T) {
	t.Parallel()
	raw := `{"apiKey":"sk-ant-0123456789","name":"n","provider":{"kind":"openai","apiKey":"sk-proj-abcdef"},"routes":[{"kind":"x","apiKey":"sk-route-xyz"}]}`
	var p credentials
	if err := DecodeParams(json.RawMessage(raw), &p); err != nil {
		t.Fatal(err)
	}
	got := secretsOf(&p)
	slices.Sort(got)
	want := []string{"sk-ant-0123456789", "sk-proj-abcdef", "sk-route-xyz"}
	if !slices.Equal(got, want) {
		t.Fatalf("secretsOf = %q, want %q", got, want)
	}
}

func TestDecodeParamsNeverQuotesAWrongValue(t *testing.T) {
	t.Parallel()
	const secret = "sk-ant-SECRET-0123456789"
	tests := []struct {
		name string
		raw  string
		into func() any
	}{
		{"a secret given for an integer", `{"protocolVersion":"` + secret + `"}`, func() any { return new(InitializeParams) }},
		{"a secret given for an object", `{"protocolVersion":1,"clientInfo":"` + secret + `"}`, func() any { return new(InitializeParams) }},
		{"a secret given for a boolean", `{"protocolVersion":1,"sandbox":"` + secret + `"}`, func() any { return new(InitializeParams) }},
		{"a secret given for an array", `{"steps":"` + secret + `"}`, func() any { return new(planParams) }},
		{"a secret given inside an array of the wrong type", `{"steps":[{"id":"a","dependsOn":[{"k":"` + secret + `"}]}]}`, func() any { return new(planParams) }},
		{"a secret given inside an object for a string field", `{"apiKey":{"value":"` + secret + `"}}`, func() any { return new(credentials) }},
		{"a secret beside an unknown field", `{"apiKey":"` + secret + `","unknown":"` + secret + `"}`, func() any { return new(credentials) }},
		{"a secret in a duplicate field", `{"apiKey":"` + secret + `","apiKey":"` + secret + `"}`, func() any { return new(credentials) }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is not in the error", func(t *testing.T) {
			t.Parallel()
			err := DecodeParams(json.RawMessage(tt.raw), tt.into())
			if err == nil {
				t.Fatal("DecodeParams accepted the params, want an error")
			}
			var je *jrpc2.Error
			if !errors.As(err, &je) || je.Code != CodeInvalidParams {
				t.Fatalf("error = %#v, want a -32602 *jrpc2.Error", err)
			}
			if strings.Contains(je.Message, "SECRET") || strings.Contains(string(je.Data), "SECRET") {
				t.Fatalf("error %q quotes the value", je.Message)
			}
		})
	}
}

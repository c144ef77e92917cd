package rpc

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/log"
)

func TestParseLogLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		want  log.Level
		ok    bool
	}{
		{"error is the error level", "error", log.ErrorLevel, true},
		{"warn is the warn level", "warn", log.WarnLevel, true},
		{"info is the info level", "info", log.InfoLevel, true},
		{"debug is the debug level", "debug", log.DebugLevel, true},
		{"trace is below debug", "trace", TraceLevel, true},
		{"an empty value means warn", "", log.WarnLevel, true},
		{"a blank value means warn", "  ", log.WarnLevel, true},
		{"level names are not case-sensitive", "DEBUG", log.DebugLevel, true},
		{"trace is not case-sensitive either", "Trace", TraceLevel, true},
		{"surrounding spaces are ignored", " info\n", log.InfoLevel, true},
		{"a bad value is an error", "verbose", log.WarnLevel, false},
		{"fatal is not a level the runtime offers", "fatal", log.WarnLevel, false},
		{"a number is not a level", "4", log.WarnLevel, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLogLevel(tt.value)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseLogLevel(%q) error = %v, want ok = %v", tt.value, err, tt.ok)
			}
			if got != tt.want {
				t.Fatalf("ParseLogLevel(%q) = %v, want %v", tt.value, got, tt.want)
			}
			if err != nil {
				msg := err.Error()
				if !strings.Contains(msg, LogEnv) || !strings.Contains(msg, tt.value) || !strings.Contains(msg, "error, warn, info, debug, trace") {
					t.Fatalf("error %q must name %s, the value and the allowed levels", msg, LogEnv)
				}
			}
		})
	}
	if TraceLevel >= log.DebugLevel {
		t.Fatalf("TraceLevel = %v, want it below debug", TraceLevel)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRedactor(t *testing.T) {
	t.Parallel()
	const (
		anthropicKey = "sk-ant-api03-AbCdEf0123456789"
		openaiKey    = "sk-proj-ZyXwVu9876543210"
		bearer       = "tok_live_5f3a9c"
		withSpace    = "pass phrase 42"
		base64ish    = "QWxhZGRpbjpvcGVu+/=="
	)
	tests := []struct {
		name    string
		secrets []string
		log     func(l *log.Logger)
		hidden  []string // must not appear in the output
		visible []string // must appear in the output
	}{
		{
			name:    "a secret in a trace value is redacted",
			secrets: []string{anthropicKey},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "recv", "apiKey", anthropicKey) },
			hidden:  []string{anthropicKey},
			visible: []string{"apiKey=[redacted]", "TRACE"},
		},
		{
			name:    "a secret in the message is redacted",
			secrets: []string{openaiKey},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "calling with "+openaiKey) },
			hidden:  []string{openaiKey},
			visible: []string{"calling with [redacted]"},
		},
		{
			name:    "every registered secret is redacted in one line",
			secrets: []string{anthropicKey, openaiKey, bearer},
			log: func(l *log.Logger) {
				l.Log(TraceLevel, "send", "a", anthropicKey, "b", openaiKey, "header", "Bearer "+bearer, "again", anthropicKey)
			},
			hidden:  []string{anthropicKey, openaiKey, bearer},
			visible: []string{"a=[redacted]", "b=[redacted]", "again=[redacted]"},
		},
		{
			name:    "a secret inside a longer value is redacted",
			secrets: []string{bearer},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "url", "url", "https://example.test/?token="+bearer+"&x=1") },
			hidden:  []string{bearer},
			visible: []string{"[redacted]&x=1"},
		},
		{
			name:    "a secret that the logger quotes is redacted",
			secrets: []string{withSpace, base64ish},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "auth", "pass", withSpace, "basic", base64ish) },
			hidden:  []string{withSpace, base64ish},
		},
		{
			name:    "a secret in an error value is redacted",
			secrets: []string{openaiKey},
			log:     func(l *log.Logger) { l.Error("request failed", "err", "401: invalid key "+openaiKey) },
			hidden:  []string{openaiKey},
		},
		{
			name:    "a secret that extends a shorter secret is redacted whole",
			secrets: []string{"sk-live-1234", "sk-live-1234-tenant-secret"},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "keys", "k", "sk-live-1234-tenant-secret") },
			hidden:  []string{"sk-live-1234", "tenant-secret"},
		},
		{
			name:    "a value shorter than the minimum is not registered",
			secrets: []string{"abc", "12345"},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "short", "a", "abc", "b", "12345") },
			visible: []string{"a=abc", "b=12345"},
		},
		{
			name:    "a value of exactly the minimum length is registered",
			secrets: []string{"123456"},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "short", "b", "123456") },
			hidden:  []string{"123456"},
		},
		{
			name:    "text without secrets passes unchanged",
			secrets: []string{anthropicKey},
			log:     func(l *log.Logger) { l.Log(TraceLevel, "recv", "method", "initialize", "id", 7) },
			visible: []string{"recv", "method=initialize", "id=7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out lockedBuffer
			r := NewRedactor(&out)
			for _, s := range tt.secrets {
				r.Add(s)
			}
			tt.log(NewLogger(r, TraceLevel))
			got := out.String()
			if got == "" {
				t.Fatal("nothing was logged at trace level")
			}
			for _, h := range tt.hidden {
				if strings.Contains(got, h) {
					t.Errorf("output %q contains %q", got, h)
				}
			}
			for _, v := range tt.visible {
				if !strings.Contains(got, v) {
					t.Errorf("output %q does not contain %q", got, v)
				}
			}
		})
	}
}

func TestRedactorRegistersOnlyLongValuesOnce(t *testing.T) {
	t.Parallel()
	r := NewRedactor(&lockedBuffer{})
	for _, s := range []string{"", "a", "abcde", "abcdef", "abcdef", "ghijklmnop"} {
		r.Add(s)
	}
	var got []string
	for _, s := range r.secrets {
		got = append(got, string(s))
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, ","), "abcdef") || !strings.Contains(strings.Join(got, ","), "ghijklmnop") {
		t.Fatalf("registered %q, want abcdef and ghijklmnop once each", got)
	}
	if minSecretLen != 6 {
		t.Fatalf("minSecretLen = %d; the cases above assume 6", minSecretLen)
	}
}

func TestRedactorWriteReportsTheInputLength(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	r := NewRedactor(&out)
	r.Add("secret-value")
	in := []byte("a secret-value b")
	n, err := r.Write(in)
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if got := out.String(); got != "a [redacted] b" {
		t.Fatalf("wrote %q", got)
	}
	if string(in) != "a secret-value b" {
		t.Fatalf("Write changed the caller's slice to %q", in)
	}
}

func TestRedactorIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	r := NewRedactor(&out)
	logger := NewLogger(r, TraceLevel)
	var wg sync.WaitGroup
	secrets := []string{"secret-aaaaaa", "secret-bbbbbb", "secret-cccccc", "secret-dddddd"}
	for _, s := range secrets {
		wg.Go(func() {
			r.Add(s)
			for range 50 {
				logger.Log(TraceLevel, "use", "key", s)
			}
		})
	}
	wg.Wait()
	for _, s := range secrets {
		if strings.Contains(out.String(), s) {
			t.Fatalf("%s was logged after it was added", s)
		}
	}
}

func TestRedactorCatchesSecretsTheLoggerEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct{ secret, fragment string }{
		{`pa"ss-word-42`, "ss-word-42"},
		{"tab\tsecret-42", "secret-42"},
		{"line-one\nline-two-42", "line-two-42"},
	}
	for _, tt := range tests {
		var out lockedBuffer
		r := NewRedactor(&out)
		r.Add(tt.secret)
		NewLogger(r, TraceLevel).Log(TraceLevel, "auth", "key", tt.secret)
		if got := out.String(); strings.Contains(got, tt.fragment) {
			t.Errorf("secret %q leaked as %q", tt.secret, got)
		}
	}
}

package rpc

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/log"
)

// TraceLevel is below debug: one line per message in and out (method, id,
// size; never the content).
const TraceLevel = log.DebugLevel - 4

// LogEnv names the environment variable that sets the log level.
const LogEnv = "TASK_X_LOG"

// ParseLogLevel reads a TASK_X_LOG value; empty means warn.
func ParseLogLevel(s string) (log.Level, error) {
	switch name := strings.ToLower(strings.TrimSpace(s)); name {
	case "":
		return log.WarnLevel, nil
	case "trace":
		return TraceLevel, nil
	case "debug", "info", "warn", "error":
		return log.ParseLevel(name)
	}
	return log.WarnLevel, fmt.Errorf("%s=%q: must be one of error, warn, info, debug, trace", LogEnv, s)
}

// NewLogger returns the runtime's logger: text lines through redactor.
func NewLogger(redactor *Redactor, level log.Level) *log.Logger {
	logger := log.NewWithOptions(redactor, log.Options{
		Level:           level,
		ReportTimestamp: true,
		Prefix:          "task-x-runtime",
	})
	styles := log.DefaultStyles()
	styles.Levels[TraceLevel] = lipgloss.NewStyle().SetString("TRACE").Faint(true)
	logger.SetStyles(styles)
	return logger
}

// Redactor is the last stop before stderr: it replaces every secret it has
// been told about (API keys, tokens) with [redacted], whichever code path
// tried to log it.
type Redactor struct {
	out     io.Writer
	mu      sync.RWMutex
	secrets [][]byte
}

// NewRedactor returns a redactor writing to w (stderr).
func NewRedactor(w io.Writer) *Redactor { return &Redactor{out: w} }

// minSecretLen keeps short values (which would redact ordinary words) out of
// the list; no real credential is this short.
const minSecretLen = 6

var redactedMark = []byte("[redacted]")

// Add registers a secret, in each form the logger may print it: as is,
// escaped (a value with a quote or a control character is written escaped),
// and line by line (a multi-line value is written one line at a time).
func (r *Redactor) Add(secret string) {
	forms := []string{secret, quoteInner(secret)}
	if strings.Contains(secret, "\n") {
		for line := range strings.SplitSeq(secret, "\n") {
			forms = append(forms, line, quoteInner(line))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, form := range forms {
		r.addLocked(form)
	}
}

func quoteInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func (r *Redactor) addLocked(secret string) {
	if len(secret) < minSecretLen {
		return
	}
	for _, s := range r.secrets {
		if string(s) == secret {
			return
		}
	}
	// Longest first, so a secret that contains another is replaced whole
	// rather than leaving its remainder behind.
	i := 0
	for i < len(r.secrets) && len(r.secrets[i]) >= len(secret) {
		i++
	}
	r.secrets = slices.Insert(r.secrets, i, []byte(secret))
}

// Write writes p with every secret replaced.
func (r *Redactor) Write(p []byte) (int, error) {
	r.mu.RLock()
	out := p
	for _, s := range r.secrets {
		if bytes.Contains(out, s) {
			out = bytes.ReplaceAll(out, s, redactedMark)
		}
	}
	r.mu.RUnlock()
	if _, err := r.out.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// waitLimit bounds every wait of the harness, so a hung runtime fails the
// test instead of the whole run. It is a guard against hangs, not a
// performance budget.
const waitLimit = 30 * time.Second

// bins holds the binaries built once for the whole package.
var bins struct {
	dir     string
	runtime string
	taskx   string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "taskx-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "../cmd/task-x-runtime", "../cmd/taskx")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.Exit(1)
	}
	bins.dir = dir
	bins.runtime = filepath.Join(dir, "task-x-runtime")
	bins.taskx = filepath.Join(dir, "taskx")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Message is any JSON-RPC message the runtime writes.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// IsResponse tells a response from a notification or a request.
func (m Message) IsResponse() bool { return m.Method == "" }

// Runtime is one task-x-runtime process driven over its stdio pipes.
type Runtime struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan Message
	stderr *lockedBuffer
	done   chan struct{}
	exit   atomic.Int32
	nextID atomic.Int64

	mu      sync.Mutex
	held    []Message // messages read while waiting for another
	badLine string    // the first stdout line that is not a protocol message
}

// Option adjusts a runtime before it starts.
type Option func(*exec.Cmd)

// Env adds an environment variable.
func Env(kv string) Option { return func(c *exec.Cmd) { c.Env = append(c.Env, kv) } }

// Start runs the runtime binary with diagnostics on and logs at debug.
func Start(t testing.TB, opts ...Option) *Runtime {
	t.Helper()
	cmd := exec.Command(bins.runtime)
	cmd.Env = append(os.Environ(), "TASK_X_DIAGNOSTICS=1", "TASK_X_LOG=debug")
	for _, o := range opts {
		o(cmd)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &Runtime{t: t, cmd: cmd, stdin: stdin, lines: make(chan Message, 1024), stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go r.readStdout(stdout)
	t.Cleanup(func() {
		r.stdin.Close()
		select {
		case <-r.done:
		case <-time.After(waitLimit):
			r.cmd.Process.Kill()
			<-r.done
		}
		if r.badLine != "" {
			t.Errorf("stdout carried a line that is not a protocol message: %q", clip(r.badLine))
		}
		if t.Failed() {
			t.Logf("runtime stderr:\n%s", clip(r.stderr.String()))
		}
	})
	return r
}

// readStdout checks that every stdout line is a JSON-RPC 2.0 message and
// queues it.
func (r *Runtime) readStdout(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m Message
			if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" || (m.Method == "" && m.Result == nil && m.Error == nil) {
				r.mu.Lock()
				if r.badLine == "" {
					r.badLine = string(line)
				}
				r.mu.Unlock()
			} else {
				r.lines <- m
			}
		}
		if err != nil {
			break
		}
	}
	err := r.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	r.exit.Store(int32(code))
	close(r.lines)
	close(r.done)
}

// Send writes one raw line (a newline is added).
func (r *Runtime) Send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing to the runtime: %v", err)
	}
}

// Request sends a request with the given id (any JSON value) and returns
// nothing; pair it with Response.
func (r *Runtime) Request(id any, method string, params any) {
	r.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	r.Send(mustJSON(r.t, msg))
}

// Notify sends a notification.
func (r *Runtime) Notify(method string, params any) {
	r.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	r.Send(mustJSON(r.t, msg))
}

// Call sends a request with a fresh id and waits for its response.
func (r *Runtime) Call(method string, params any) Message {
	r.t.Helper()
	id := r.nextID.Add(1) + 1000
	r.Request(id, method, params)
	return r.Response(id)
}

// Initialize performs a successful initialize.
func (r *Runtime) Initialize() Message {
	r.t.Helper()
	resp := r.Call("initialize", map[string]any{"protocolVersion": 1, "clientInfo": map[string]string{"name": "e2e", "version": "1"}})
	if resp.Error != nil {
		r.t.Fatalf("initialize failed: %+v", resp.Error)
	}
	return resp
}

// Response waits for the response whose id is the JSON encoding of id,
// keeping other messages for later.
func (r *Runtime) Response(id any) Message {
	r.t.Helper()
	want := mustJSON(r.t, id)
	return r.waitFor(fmt.Sprintf("the response to id %s", want), func(m Message) (bool, bool) {
		match := m.IsResponse() && string(m.ID) == want
		return match, match
	})
}

// Stream waits for the response to id and returns it with the
// notifications of method that came before it, in order.
func (r *Runtime) Stream(id any, method string) ([]Message, Message) {
	r.t.Helper()
	want := mustJSON(r.t, id)
	var notes []Message
	resp := r.waitFor(fmt.Sprintf("the response to id %s", want), func(m Message) (bool, bool) {
		if m.Method == method {
			notes = append(notes, m)
			return true, false
		}
		match := m.IsResponse() && string(m.ID) == want
		return match, match
	})
	return notes, resp
}

// Next returns the next message in order.
func (r *Runtime) Next() Message {
	r.t.Helper()
	return r.waitFor("any message", func(Message) (bool, bool) { return true, true })
}

// waitFor reads messages, held ones first, until visit says done. visit
// says whether it consumed a message; the others are held for later.
func (r *Runtime) waitFor(what string, visit func(Message) (consumed, done bool)) Message {
	r.t.Helper()
	r.mu.Lock()
	for i := 0; i < len(r.held); i++ {
		m := r.held[i]
		consumed, done := visit(m)
		if consumed {
			r.held = append(r.held[:i], r.held[i+1:]...)
			i--
		}
		if done {
			r.mu.Unlock()
			return m
		}
	}
	r.mu.Unlock()
	deadline := time.After(waitLimit)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("the runtime exited (code %d) while waiting for %s", r.exit.Load(), what)
			}
			consumed, done := visit(m)
			if done {
				return m
			}
			if !consumed {
				r.mu.Lock()
				r.held = append(r.held, m)
				r.mu.Unlock()
			}
		case <-deadline:
			r.t.Fatalf("no %s within %s", what, waitLimit)
		}
	}
}

// ExpectNoMessage checks that nothing but the response to a probe request
// arrives: it proves a message before the probe was ignored.
func (r *Runtime) ExpectNoMessage() {
	r.t.Helper()
	probe := fmt.Sprintf("probe-%d", r.nextID.Add(1))
	r.Request(probe, "$/diagnostics/sleep", map[string]int{"ms": 0})
	m := r.Next()
	if string(m.ID) != strconv.Quote(probe) {
		r.t.Fatalf("expected nothing before the probe's reply, got %s", describe(m))
	}
}

// CloseStdin ends the runtime's input.
func (r *Runtime) CloseStdin() { r.stdin.Close() }

// Signal sends a signal to the process.
func (r *Runtime) Signal(sig syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
}

// WaitExit waits for the process to end and returns its exit code, and the
// messages it wrote that nobody read.
func (r *Runtime) WaitExit() (int, []Message) {
	r.t.Helper()
	var rest []Message
	deadline := time.After(waitLimit)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				<-r.done
				r.mu.Lock()
				rest = append(r.held, rest...)
				r.held = nil
				r.mu.Unlock()
				return int(r.exit.Load()), rest
			}
			rest = append(rest, m)
		case <-deadline:
			r.t.Fatalf("the runtime did not exit within %s", waitLimit)
		}
	}
}

// WaitStderr waits until the runtime has logged text.
func (r *Runtime) WaitStderr(text string) {
	r.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(r.stderr.String(), text) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the runtime did not log %q within %s", text, waitLimit)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
}

// ExitedCleanly waits for the process to end, fails the test unless its
// exit code is 0, and returns the messages nobody read.
func (r *Runtime) ExitedCleanly() []Message {
	r.t.Helper()
	code, rest := r.WaitExit()
	if code != 0 {
		r.t.Fatalf("exit code %d, want 0", code)
	}
	return rest
}

// Stderr returns what the runtime logged so far.
func (r *Runtime) Stderr() string { return r.stderr.String() }

// ExpectError checks a response's error code and that its message contains
// each of the given fragments.
func ExpectError(t testing.TB, m Message, code int, fragments ...string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("expected error %d, got result %s", code, clip(string(m.Result)))
	}
	if m.Error.Code != code {
		t.Fatalf("expected error %d, got %d: %s", code, m.Error.Code, m.Error.Message)
	}
	for _, f := range fragments {
		if !bytes.Contains([]byte(m.Error.Message), []byte(f)) {
			t.Fatalf("error message %q does not mention %q", m.Error.Message, f)
		}
	}
}

// ExpectResult checks a response succeeded and decodes its result into v.
func ExpectResult(t testing.TB, m Message, v any) {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("expected a result, got error %d: %s", m.Error.Code, m.Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(m.Result, v); err != nil {
			t.Fatalf("decoding result %s: %v", clip(string(m.Result)), err)
		}
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func describe(m Message) string {
	b, _ := json.Marshal(m)
	return clip(string(b))
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

// lockedBuffer collects stderr from the process's copying goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

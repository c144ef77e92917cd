package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestLogReplayEqualsWhatWasEmitted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		sessions   []int // events emitted per OpenLog ... Close
		flushEvery int   // 0: only Close flushes
		odd        bool  // text that JSON must escape
	}{
		{name: "one event is replayed", sessions: []int{1}},
		{name: "1000 events with a Flush every 100 are each readable after their Flush", sessions: []int{1000}, flushEvery: 100},
		{name: "5000 events flushed only by Close are all replayed", sessions: []int{5000}},
		{name: "events whose text needs escaping come back unchanged", sessions: []int{20}, flushEvery: 7, odd: true},
		{name: "a log opened three times appends after what is there", sessions: []int{100, 1, 250}, flushEvery: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			var emitted []Event
			for _, n := range tt.sessions {
				l, err := OpenLog(dataDir, "run-1")
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range logTestEvents("run-1", len(emitted), n, tt.odd) {
					l.Emit(e)
					emitted = append(emitted, e)
					if tt.flushEvery > 0 && len(emitted)%tt.flushEvery == 0 {
						if err := l.Flush(); err != nil {
							t.Fatalf("Flush: %v", err)
						}
						logWantReplay(t, dataDir, "run-1", 0, emitted)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			logWantReplay(t, dataDir, "run-1", 0, emitted)
		})
	}
}

func TestLogRunIDMustBeOnePathElement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		runID string
		ok    bool
	}{
		{name: "an empty id is refused", runID: ""},
		{name: "a dot is refused", runID: "."},
		{name: "two dots are refused", runID: ".."},
		{name: "a slash is refused", runID: "a/b"},
		{name: "a climb out of the data dir is refused", runID: "../escape"},
		{name: "an absolute path is refused", runID: "/etc"},
		{name: "a backslash is refused", runID: `a\b`},
		{name: "a NUL byte is refused", runID: "a\x00b"},
		{name: "an ordinary id is taken", runID: "run-01JDX3", ok: true},
		{name: "an id with dots inside is taken", runID: "task.7...", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			l, err := OpenLog(dataDir, tt.runID)
			if tt.ok {
				if err != nil {
					t.Fatalf("OpenLog(%q): %v", tt.runID, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidRunID) || !strings.Contains(err.Error(), fmt.Sprintf("runId %q", tt.runID)) {
				t.Errorf("OpenLog(%q): %v, want an ErrInvalidRunID naming the runId", tt.runID, err)
			}
			if _, err := Replay(dataDir, tt.runID, 0); !errors.Is(err, ErrInvalidRunID) {
				t.Errorf("Replay(%q): %v, want an ErrInvalidRunID", tt.runID, err)
			}
			if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
				t.Errorf("a refused runId left %d entries in the data dir", len(entries))
			}
		})
	}
}

func TestOpenLogCreatesPrivateFolderAndFile(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	l, err := OpenLog(dataDir, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{
		filepath.Join(dataDir, logRunsDir):                      fs.ModeDir | 0o700,
		filepath.Join(dataDir, logRunsDir, "r"):                 fs.ModeDir | 0o700,
		filepath.Join(dataDir, logRunsDir, "r", "events.jsonl"): 0o600,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
		}
	}
}

func TestLogEmitAfterCloseDoesNothing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	l, err := OpenLog(dataDir, "r")
	if err != nil {
		t.Fatal(err)
	}
	events := logTestEvents("r", 0, 5, false)
	for _, e := range events {
		l.Emit(e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logWithin(t, "Emit, Flush and Close after Close", func() {
		for _, e := range logTestEvents("r", 5, 100, false) {
			l.Emit(e)
		}
		if err := l.Flush(); err != nil {
			t.Errorf("Flush after Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
	})
	logWantReplay(t, dataDir, "r", 0, events)
}

func TestLogConcurrentEmitKeepsEachEmittersOrder(t *testing.T) {
	t.Parallel()
	const emitters, each, flushEvery = 8, 300, 60
	dataDir := t.TempDir()
	l, err := OpenLog(dataDir, "r")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range emitters {
		wg.Go(func() {
			step := StepID(fmt.Sprintf("emitter-%d", g))
			for i := range each {
				l.Emit(Event{RunID: "r", StepID: step, Kind: "tool", From: StatusPending, To: StatusRunning, Attempt: i})
				if (i+1)%flushEvery != 0 {
					continue
				}
				if err := l.Flush(); err != nil {
					t.Errorf("Flush: %v", err)
					return
				}
				// What this emitter emitted before Flush is on disk now.
				events, err := Replay(dataDir, "r", 0)
				if err != nil {
					t.Errorf("Replay during the run: %v", err)
					return
				}
				if n := logCountStep(events, step); n != i+1 {
					t.Errorf("after %s's Flush the log holds %d of its events, want %d", step, n, i+1)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := Replay(dataDir, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != emitters*each {
		t.Fatalf("replayed %d events, want %d", len(events), emitters*each)
	}
	next := map[StepID]int{}
	for _, e := range events {
		if e.Attempt != next[e.StepID] {
			t.Fatalf("%s: event %d came where %d was due", e.StepID, e.Attempt, next[e.StepID])
		}
		next[e.StepID]++
	}
}

// logGatedFile holds every write until release is closed, and says on
// started when a write has begun.
type logGatedFile struct {
	*os.File
	started chan struct{}
	release chan struct{}
}

func (f *logGatedFile) Write(p []byte) (int, error) {
	select {
	case f.started <- struct{}{}:
	default:
	}
	<-f.release
	return f.File.Write(p)
}

func TestLogEmitWaitsForTheDiskOnlyWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	const limit = 8
	dataDir := t.TempDir()
	gate := &logGatedFile{started: make(chan struct{}, 1), release: make(chan struct{})}
	l, err := openLog(dataDir, "r", func(f *os.File) logFile {
		gate.File = f
		return gate
	})
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.limit = limit
	l.mu.Unlock()
	events := logTestEvents("r", 0, 3*limit, false)

	l.Emit(events[0])
	<-gate.started // the writer holds events[0] in a write the disk does not finish
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for _, e := range events[1:] {
			l.Emit(e)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for queued := 0; queued < limit; {
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d events after 30s, want %d", queued, limit)
		}
		runtime.Gosched()
		l.mu.Lock()
		queued = len(l.queue)
		l.mu.Unlock()
	}
	select {
	case <-emitted:
		t.Fatalf("Emit queued %d events behind a stuck write, want it to wait at %d", len(events)-1, limit)
	default:
	}
	close(gate.release)
	logWithin(t, "Emit once the disk went on", func() { <-emitted })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logWantReplay(t, dataDir, "r", 0, events)
}

// logFullDisk is a file that takes room more bytes, then fails as a full
// disk does, after a short write.
type logFullDisk struct {
	*os.File
	room int
}

func (f *logFullDisk) Write(p []byte) (int, error) {
	if len(p) <= f.room {
		f.room -= len(p)
		return f.File.Write(p)
	}
	n, err := f.File.Write(p[:f.room])
	f.room -= n
	if err == nil {
		err = &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

// logFailingSync is a file whose fsync fails, as on a dying disk.
type logFailingSync struct{ *os.File }

func (f logFailingSync) Sync() error {
	return &fs.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
}

func TestLogWriteErrorIsReportedAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	first := logTestEvents("r", 0, 10, false)
	room := len(logEncode(t, first)) + 20 // the first events, and part of the next line
	tests := []struct {
		name string
		// wrap stands between the writer and the file; nil means the real file.
		wrap func(*os.File) logFile
		// underneath runs after the first Flush, from outside the writer.
		underneath func(l *Log)
		want       error
	}{
		{
			name: "a disk that fills up in the middle of a line",
			wrap: func(f *os.File) logFile {
				return &logFullDisk{File: f, room: room}
			},
			want: syscall.ENOSPC,
		},
		{
			name: "an fsync that fails",
			wrap: func(f *os.File) logFile { return logFailingSync{f} },
			want: syscall.EIO,
		},
		{
			name:       "a file closed underneath the log",
			underneath: func(l *Log) { l.f.(*os.File).Close() },
			want:       os.ErrClosed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			l, err := openLog(dataDir, "r", tt.wrap)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range first {
				l.Emit(e)
			}
			flushErr := l.Flush()
			if tt.underneath != nil {
				tt.underneath(l)
			}
			logWithin(t, "Emit, Flush and Close after a write error", func() {
				for _, e := range logTestEvents("r", 10, 1000, false) {
					l.Emit(e)
				}
				if err := l.Flush(); !errors.Is(err, tt.want) {
					t.Errorf("Flush: %v, want %v (the first one returned %v)", err, tt.want, flushErr)
				}
				if err := l.Close(); !errors.Is(err, tt.want) {
					t.Errorf("Close: %v, want %v", err, tt.want)
				}
			})
			if err := l.Err(); !errors.Is(err, tt.want) {
				t.Errorf("Err: %v, want %v", err, tt.want)
			}

			// The file holds a gap-free prefix of the run; a new Log goes on
			// from its end.
			got, err := Replay(dataDir, "r", 0)
			if err != nil {
				t.Fatalf("Replay after the error: %v", err)
			}
			if !reflect.DeepEqual(got, logTestEvents("r", 0, len(got), false)) {
				t.Fatalf("after the error the log holds %d events that are not the first %d emitted", len(got), len(got))
			}
			l, err = OpenLog(dataDir, "r")
			if err != nil {
				t.Fatal(err)
			}
			more := logTestEvents("r", len(got), 5, false)
			for _, e := range more {
				l.Emit(e)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			logWantReplay(t, dataDir, "r", 0, append(got, more...))
		})
	}
}

// logTestEvents returns n step events of a run with seqs from..from+n-1.
// With odd, their errors hold text JSON must escape.
func logTestEvents(runID string, from, n int, odd bool) []Event {
	ts := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	events := make([]Event, n)
	for i := range events {
		seq := uint64(from + i)
		events[i] = Event{
			RunID:   runID,
			StepID:  StepID(fmt.Sprintf("step-%d", seq/3)),
			Kind:    "tool",
			From:    StatusPending,
			To:      StatusRunning,
			Attempt: 1,
			Seq:     seq,
			TS:      ts.Add(time.Duration(seq) * time.Microsecond),
		}
		if odd {
			events[i].To = StatusFailed
			events[i].Error = fmt.Sprintf("line one\nline \"two\" <&> \t é ✓ \u2028 %d", seq)
		}
	}
	return events
}

func logRunEvent(runID string, seq uint64, from, to Status) Event {
	return Event{RunID: runID, Kind: RunKind, From: from, To: to, Seq: seq, TS: time.Date(2026, 11, 30, 9, 0, int(seq), 0, time.UTC)}
}

func logStepEvent(runID string, seq uint64, step StepID, from, to Status) Event {
	e := logRunEvent(runID, seq, from, to)
	e.StepID, e.Kind, e.Attempt = step, "tool", 1
	return e
}

// logEncode returns events as the writer writes them.
func logEncode(t testing.TB, events []Event) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

func logWriteEvents(t *testing.T, dataDir, runID string, events []Event) {
	t.Helper()
	l, err := OpenLog(dataDir, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		l.Emit(e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func logWriteRaw(t *testing.T, dataDir, runID, content string) {
	t.Helper()
	dir := filepath.Join(dataDir, logRunsDir, runID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logFileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func logReadRaw(t *testing.T, dataDir, runID string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, logRunsDir, runID, logFileName))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func logWantReplay(t *testing.T, dataDir, runID string, fromSeq uint64, want []Event) {
	t.Helper()
	got, err := Replay(dataDir, runID, fromSeq)
	if err != nil {
		t.Fatalf("Replay(%s, from %d): %v", runID, fromSeq, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Replay(%s, from %d) returned %d events, want %d", runID, fromSeq, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("Replay(%s, from %d): event %d is\n%+v\nwant\n%+v", runID, fromSeq, i, got[i], want[i])
		}
	}
}

// logWithin runs fn and fails the test if it has not returned within a
// generous deadline (a Log that blocks forever).
func logWithin(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return within 30s", what)
	}
}

func logCountStep(events []Event, step StepID) int {
	n := 0
	for _, e := range events {
		if e.StepID == step {
			n++
		}
	}
	return n
}

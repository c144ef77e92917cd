package workflow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReplayFromASeq(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	events := logTestEvents("r", 0, 50, false)
	logWriteEvents(t, dataDir, "r", events)
	tests := []struct {
		name    string
		fromSeq uint64
		want    []Event
	}{
		{name: "from 0 returns every event", fromSeq: 0, want: events},
		{name: "from 1 skips only the first", fromSeq: 1, want: events[1:]},
		{name: "from the middle returns the second half", fromSeq: 25, want: events[25:]},
		{name: "from the last seq returns the last event", fromSeq: 49, want: events[49:]},
		{name: "from past the end returns nothing", fromSeq: 50, want: nil},
		{name: "from far past the end returns nothing", fromSeq: 1 << 40, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logWantReplay(t, dataDir, "r", tt.fromSeq, tt.want)
		})
	}
}

func TestReplayOfARunWithNoLogIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := Replay(t.TempDir(), "never-ran", 0)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Replay of a missing run: %v, want an fs.ErrNotExist", err)
	}
}

func TestLogTornLastLineIsDroppedAndTheLogGoesOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tail string
	}{
		{name: "half an event is dropped", tail: `{"runId":"r","stepId":"s","kind":"tool","from":"runn`},
		{name: "a lone brace is dropped", tail: `{`},
		{name: "NUL bytes a crash left are dropped", tail: "\x00\x00\x00\x00"},
		{name: "a whole event without its newline is dropped, as it was never committed", tail: `{"runId":"r","kind":"tool","from":"pending","to":"running","seq":3,"ts":"2026-11-30T09:00:00Z"}`},
		{name: "a torn line longer than the tail scan's chunk is dropped", tail: `{"runId":"r","error":"` + strings.Repeat("x", 10000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			events := logTestEvents("r", 0, 3, false)
			logWriteRaw(t, dataDir, "r", logEncode(t, events)+tt.tail)
			logWantReplay(t, dataDir, "r", 0, events)

			l, err := OpenLog(dataDir, "r")
			if err != nil {
				t.Fatal(err)
			}
			more := logTestEvents("r", 3, 4, false)
			for _, e := range more {
				l.Emit(e)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			all := append(events, more...)
			logWantReplay(t, dataDir, "r", 0, all)
			if got, want := logReadRaw(t, dataDir, "r"), logEncode(t, all); got != want {
				t.Errorf("the file after the torn line was cut and events appended:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestReplayCorruptLineInTheMiddleIsAnErrorNamingTheLine(t *testing.T) {
	t.Parallel()
	events := logTestEvents("r", 0, 3, false)
	good1, good3 := logEncode(t, events[:1]), logEncode(t, events[2:])
	tests := []struct {
		name     string
		content  string
		wantLine string
	}{
		{name: "text that is not JSON on line 2", content: good1 + "not json\n" + good3, wantLine: "line 2"},
		{name: "an empty line 2", content: good1 + "\n" + good3, wantLine: "line 2"},
		{name: "half an object ended by a newline on line 2", content: good1 + `{"runId":"r","seq":` + "\n" + good3, wantLine: "line 2"},
		{name: "a JSON null on line 2", content: good1 + "null\n" + good3, wantLine: "line 2"},
		{name: "a bad last line that has its newline is corruption, not a torn line", content: good1 + good3 + "garbage\n", wantLine: "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			logWriteRaw(t, dataDir, "r", tt.content)
			_, err := Replay(dataDir, "r", 0)
			if !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("Replay: %v, want an ErrCorruptLog", err)
			}
			if !strings.Contains(err.Error(), tt.wantLine) || !strings.Contains(err.Error(), logFileName) {
				t.Errorf("Replay: %q, want it to name %s and %q", err, logFileName, tt.wantLine)
			}
		})
	}
}

// logRunFixture is a run log on disk: events, then raw text (a torn line).
type logRunFixture struct {
	events []Event
	tail   string
}

func TestMarkInterrupted(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := func(id string) []Event {
		return []Event{
			logRunEvent(id, 0, StatusPending, StatusRunning),
			logStepEvent(id, 1, "a", StatusPending, StatusRunning),
			logStepEvent(id, 2, "a", StatusRunning, StatusSucceeded),
		}
	}
	ended := func(id string, to Status) []Event {
		return append(started(id), logRunEvent(id, 3, StatusRunning, to))
	}
	tests := []struct {
		name      string
		runs      map[string]logRunFixture
		noRunsDir bool
		strays    bool // a stray file and a folder with no log under runs/
		want      []string
	}{
		{
			name: "a run that succeeded is left alone",
			runs: map[string]logRunFixture{"done": {events: ended("done", StatusSucceeded)}},
		},
		{
			name: "runs that failed or were cancelled are left alone",
			runs: map[string]logRunFixture{
				"failed":    {events: ended("failed", StatusFailed)},
				"cancelled": {events: ended("cancelled", StatusCancelled)},
			},
		},
		{
			name: "a run left running is marked failed with the next seq",
			runs: map[string]logRunFixture{"killed": {events: started("killed")}},
			want: []string{"killed"},
		},
		{
			name: "a run with a torn line after its last good run-level event is marked after that line",
			runs: map[string]logRunFixture{"torn": {
				events: started("torn"),
				tail:   `{"runId":"torn","kind":"run","from":"running","to":"succ`,
			}},
			want: []string{"torn"},
		},
		{
			name: "only the runs left running are marked, in sorted order",
			runs: map[string]logRunFixture{
				"b-killed": {events: started("b-killed")},
				"c-done":   {events: ended("c-done", StatusSucceeded)},
				"a-killed": {events: started("a-killed")},
			},
			want: []string{"a-killed", "b-killed"},
		},
		{
			name: "a run with only step events is left alone",
			runs: map[string]logRunFixture{"steps": {events: started("steps")[1:]}},
		},
		{
			name: "an empty log is left alone",
			runs: map[string]logRunFixture{"empty": {}},
		},
		{
			name:   "a stray file and a folder with no log are skipped",
			runs:   map[string]logRunFixture{"killed": {events: started("killed")}},
			strays: true,
			want:   []string{"killed"},
		},
		{name: "an empty runs folder marks nothing", runs: map[string]logRunFixture{}},
		{name: "no runs folder marks nothing", noRunsDir: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			if !tt.noRunsDir {
				if err := os.MkdirAll(filepath.Join(dataDir, logRunsDir), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			before := map[string]string{}
			for id, run := range tt.runs {
				logWriteRaw(t, dataDir, id, logEncode(t, run.events)+run.tail)
				before[id] = logReadRaw(t, dataDir, id)
			}
			if tt.strays {
				if err := os.WriteFile(filepath.Join(dataDir, logRunsDir, "stray.txt"), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Join(dataDir, logRunsDir, "no-log"), 0o700); err != nil {
					t.Fatal(err)
				}
			}

			got, err := MarkInterrupted(dataDir, now)
			if err != nil {
				t.Fatalf("MarkInterrupted: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("MarkInterrupted marked %q, want %q", got, tt.want)
			}
			for id, run := range tt.runs {
				if !slices.Contains(tt.want, id) {
					if after := logReadRaw(t, dataDir, id); after != before[id] {
						t.Errorf("run %s was changed:\n%q\nwant it untouched:\n%q", id, after, before[id])
					}
					continue
				}
				last := run.events[len(run.events)-1]
				want := append(append([]Event(nil), run.events...), Event{
					RunID: id, Kind: RunKind, From: StatusRunning, To: StatusFailed,
					Error: "interrupted", Reason: "interrupted", Seq: last.Seq + 1, TS: now,
				})
				logWantReplay(t, dataDir, id, 0, want)
			}

			again, err := MarkInterrupted(dataDir, now.Add(time.Hour))
			if err != nil || len(again) != 0 {
				t.Errorf("a second MarkInterrupted marked %q (err %v), want nothing", again, err)
			}
		})
	}
}

func TestMarkInterruptedReportsACorruptLogAndStillMarksTheOthers(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	good := []Event{logRunEvent("good", 0, StatusPending, StatusRunning)}
	logWriteRaw(t, dataDir, "good", logEncode(t, good))
	logWriteRaw(t, dataDir, "bad", "garbage\n"+logEncode(t, good))

	got, err := MarkInterrupted(dataDir, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("MarkInterrupted: %v, want an ErrCorruptLog naming line 1", err)
	}
	if !reflect.DeepEqual(got, []string{"good"}) {
		t.Errorf("MarkInterrupted marked %q, want [good]", got)
	}
}

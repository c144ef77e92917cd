package workflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrCorruptLog is wrapped by the error of Replay and MarkInterrupted
// for a line of a run log, other than a torn last one, that is not an
// event.
var ErrCorruptLog = errors.New("corrupt run log")

// ReasonInterrupted is the Error and the Reason of the event that
// MarkInterrupted appends to a run a killed process left running.
const ReasonInterrupted = "interrupted"

// Replay returns a run's logged events with seq >= fromSeq, in the order
// they were written, for a client that reconnects or a person who
// inspects a run. A torn last line (whatever follows the last newline, the
// remains of a crash mid-write) is dropped; any other line that is not an
// event is an error that wraps ErrCorruptLog and names the line. A run
// with no log is an error that wraps fs.ErrNotExist.
//
// It reads what is on disk: Flush a Log first to see all it was given.
func Replay(dataDir, runID string, fromSeq uint64) ([]Event, error) {
	dir, err := logRunDir(dataDir, runID)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, logFileName)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	defer f.Close()
	var events []Event
	err = logScan(f, path, func(e Event) {
		if e.Seq >= fromSeq {
			events = append(events, e)
		}
	})
	return events, err
}

// MarkInterrupted ends the runs a killed process left running. It looks at
// every run under dataDir/runs; one whose last run-level event (Kind
// RunKind) went to running gets a run-level event from running to failed,
// with Error and Reason "interrupted", the seq after its log's last one,
// and TS now. It returns the ids of the runs it marked, sorted. Runs that
// ended, runs with no run-level event, and folders with no log are left
// alone, so calling it twice marks nothing the second time.
//
// A run whose log cannot be read or appended to is not marked; the others
// still are, and the error joins every such failure. Call it at start,
// before this process opens a run: it assumes no one else writes the logs.
func MarkInterrupted(dataDir string, now time.Time) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dataDir, logRunsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	var marked []string
	var errs []error
	for _, entry := range entries { // ReadDir sorts by name
		if !entry.IsDir() {
			continue
		}
		if _, err := logRunDir(dataDir, entry.Name()); err != nil {
			continue
		}
		ok, err := logMarkInterrupted(dataDir, entry.Name(), now)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			marked = append(marked, entry.Name())
		}
	}
	return marked, errors.Join(errs...)
}

// logMarkInterrupted marks one run, and reports whether it did.
func logMarkInterrupted(dataDir, runID string, now time.Time) (bool, error) {
	path := filepath.Join(dataDir, logRunsDir, runID, logFileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("run log: %w", err)
	}
	var lastRun, last Event
	var seen, seenRun bool
	err = logScan(f, path, func(e Event) {
		last, seen = e, true
		if e.Kind == RunKind {
			lastRun, seenRun = e, true
		}
	})
	f.Close()
	if err != nil {
		return false, err
	}
	if !seen || !seenRun || lastRun.To != StatusRunning {
		return false, nil
	}
	// OpenLog cuts off a torn last line, so the event lands on a line of
	// its own right after the last good one.
	l, err := OpenLog(dataDir, runID)
	if err != nil {
		return false, err
	}
	l.Emit(Event{
		RunID:  runID,
		Kind:   RunKind,
		From:   StatusRunning,
		To:     StatusFailed,
		Error:  ReasonInterrupted,
		Reason: ReasonInterrupted,
		Seq:    last.Seq + 1,
		TS:     now,
	})
	if err := l.Close(); err != nil {
		return false, err
	}
	return true, nil
}

// logScan calls fn with each event of a log in order. Whatever follows the
// last newline is a torn line and is dropped; a line before it that is
// not an event is an ErrCorruptLog naming the line (counted from 1).
func logScan(r io.Reader, path string, fn func(Event)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil // b, if not empty, is the torn line
		}
		if err != nil {
			return fmt.Errorf("run log: %w", err)
		}
		var e Event
		if !bytes.HasPrefix(b, []byte("{")) {
			// The writer writes objects only; this also refuses "null".
			return fmt.Errorf("%w: %s line %d: not a JSON object", ErrCorruptLog, path, line)
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%w: %s line %d: %v", ErrCorruptLog, path, line, err)
		}
		fn(e)
	}
}

package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The run log: every event of a run appended to runs/<runId>/events.jsonl
// under the data dir, one JSON object a line. This file writes it;
// runlog_replay.go reads it back and marks runs a killed process left
// running.
//
// The file is append-only, so it is not written the temp-file-and-rename
// way of the other files in the data dir. A line counts only once its
// newline is on disk: whatever follows the last newline is a torn line (a
// crash mid-write). Replay ignores it, and OpenLog cuts it off before it
// appends, so a torn line is only ever the last one and any bad line in
// the middle is real corruption.

// ErrInvalidRunID is wrapped by the errors of OpenLog and Replay when a
// runId cannot name a folder of its own.
var ErrInvalidRunID = errors.New("invalid runId")

const (
	logRunsDir  = "runs"
	logFileName = "events.jsonl"
	// logQueueLimit bounds the events waiting for the writer (about 10 MB),
	// so a disk slower than the run costs a pause in Emit, not all memory.
	logQueueLimit = 1 << 16
	// logWriteChunk is the most a single write takes from a batch.
	logWriteChunk = 1 << 20
)

// logFile is what the writer needs of the file. Tests wrap the real file
// to make writes fail as a full disk would, which works even as root.
type logFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// Log appends one run's events to its file with group commit: Emit only
// queues the event, and one writer goroutine writes everything queued (in
// one write, unless it passes 1 MiB) and makes it durable with one fsync.
// An fsync per event would cap a run near 3 500 transitions a second on an
// ordinary disk.
//
// Log implements Sink. Its methods are safe for concurrent use.
type Log struct {
	path string
	f    logFile

	mu      sync.Mutex
	changed sync.Cond // broadcast when the writer takes a batch and when it is done with it
	queue   []Event   // emitted, not yet taken by the writer
	limit   int       // the most events queue holds; logQueueLimit but in tests
	spare   []Event   // the last batch's array, reused for the next queue
	emitted uint64    // events taken by Emit
	done    uint64    // events the writer has finished with (synced, or given up on after err)
	err     error     // the first write, sync or encoding error
	closed  bool

	wake      chan struct{} // capacity 1: "the queue is not empty" or "closed"
	exited    chan struct{} // closed when the writer returns
	closeOnce sync.Once
	closeErr  error
}

// OpenLog opens runs/<runID>/events.jsonl under dataDir for appending,
// creating the folders (mode 0700) and the file (mode 0600) as needed. A
// torn last line left by a crash is cut off first, so the next event
// starts on a line of its own. runID must be a single path element: not
// empty, not "." or "..", without "/" or "\".
//
// Close the Log to end its writer goroutine.
func OpenLog(dataDir, runID string) (*Log, error) {
	return openLog(dataDir, runID, nil)
}

// openLog is OpenLog with a seam: wrap, when not nil, stands between the
// writer and the file.
func openLog(dataDir, runID string, wrap func(*os.File) logFile) (*Log, error) {
	dir, err := logRunDir(dataDir, runID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	path := filepath.Join(dir, logFileName)
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	if err := logDropTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("run log: %w", err)
	}
	if created {
		// The new file's name must survive a crash as well as its lines.
		if err := logSyncDirs(dir, filepath.Dir(dir)); err != nil {
			f.Close()
			return nil, fmt.Errorf("run log: %w", err)
		}
	}
	l := &Log{
		path:   path,
		f:      f,
		limit:  logQueueLimit,
		wake:   make(chan struct{}, 1),
		exited: make(chan struct{}),
	}
	if wrap != nil {
		l.f = wrap(f)
	}
	l.changed.L = &l.mu
	go l.write()
	return l, nil
}

// Emit queues an event for the writer and returns: it never drops an
// event, and waits for the disk only when 65 536 events are already
// queued, until the writer takes them (a batch takes the whole queue, so
// the queue holds what arrives during one write and fsync, far less
// unless the disk cannot keep up with the run). Events are written in the
// order Emit was called.
//
// Emit after Close does nothing, and the event is logged nowhere: the
// run has ended, and a late event must not crash or block its emitter. An
// Emit still waiting for room when Close comes counts as after Close.
func (l *Log) Emit(e Event) {
	l.mu.Lock()
	for len(l.queue) >= l.limit && !l.closed {
		l.changed.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, e)
	l.emitted++
	l.mu.Unlock()
	l.poke()
}

// Flush waits until every event emitted before it is written and
// fsynced, and returns Err. It returns at once after Close.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	target := l.emitted
	for l.done < target {
		l.changed.Wait()
	}
	return l.err
}

// Close flushes, ends the writer goroutine and closes the file. It
// returns the first error of the log's life (Err) or of closing the file;
// calling it again returns the same.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.changed.Broadcast() // emitters waiting for room give up
		l.mu.Unlock()
		l.poke()
		<-l.exited
		l.closeErr = errors.Join(l.Err(), l.f.Close())
	})
	return l.closeErr
}

// Err returns the first error writing or syncing the file, if any. A full
// disk must not stop a run, so the error is not returned by Emit: the run
// goes on, and whoever owns the log reports Err when the run ends. After
// the first error the log writes nothing more, so the file stays a prefix
// of the run's events with no gaps (perhaps ending in a torn line, which
// readers drop).
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// poke wakes the writer unless a wake-up is already pending.
func (l *Log) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// write is the writer goroutine: it takes the whole queue, commits it as
// one batch, and tells Flush how far it got, until Close.
func (l *Log) write() {
	defer close(l.exited)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for range l.wake {
		l.mu.Lock()
		batch, end, closing, failed := l.queue, l.emitted, l.closed, l.err != nil
		l.queue, l.spare = l.spare, nil
		l.changed.Broadcast() // the queue has room again
		l.mu.Unlock()

		var err error
		if len(batch) > 0 && !failed {
			err = l.commit(&buf, enc, batch)
		}
		clear(batch)

		l.mu.Lock()
		if err != nil && l.err == nil {
			l.err = err
		}
		l.done = end
		l.spare = batch[:0]
		l.changed.Broadcast()
		l.mu.Unlock()
		if closing {
			// Emit is a no-op once closed is set, so this batch was the last.
			return
		}
	}
}

// commit writes a batch and syncs it once. The batch goes in one write
// unless it passes logWriteChunk, so that a burst does not grow the buffer
// for the rest of the run. An event that does not encode (a time.Time
// past year 9999) ends the batch there: what came before it is still
// written.
func (l *Log) commit(buf *bytes.Buffer, enc *json.Encoder, batch []Event) error {
	buf.Reset()
	var encErr error
	for i := range batch {
		if err := enc.Encode(&batch[i]); err != nil {
			encErr = fmt.Errorf("run log %s: encode the event of seq %d: %w", l.path, batch[i].Seq, err)
			break
		}
		if buf.Len() >= logWriteChunk {
			if err := l.writeOut(buf); err != nil {
				return err
			}
		}
	}
	if err := l.writeOut(buf); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("run log: sync: %w", err)
	}
	return encErr
}

// writeOut writes buf to the file and empties it.
func (l *Log) writeOut(buf *bytes.Buffer) error {
	if buf.Len() == 0 {
		return nil
	}
	_, err := l.f.Write(buf.Bytes())
	buf.Reset()
	if err != nil {
		return fmt.Errorf("run log: write: %w", err)
	}
	return nil
}

// logRunDir returns dataDir/runs/<runID>, or an error naming a runID that
// is not a single path element.
func logRunDir(dataDir, runID string) (string, error) {
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`+"\x00") {
		return "", fmt.Errorf("%w %q: must be one path element (not empty, not \".\" or \"..\", no \"/\", \"\\\" or NUL)", ErrInvalidRunID, runID)
	}
	return filepath.Join(dataDir, logRunsDir, runID), nil
}

// logDropTornTail cuts off whatever follows the file's last newline, the
// remains of a write a crash interrupted, and syncs the cut. It reads
// backwards from the end, so a long log costs no more than a short one.
func logDropTornTail(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	keep := int64(0)
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	if keep == size {
		return nil
	}
	if err := f.Truncate(keep); err != nil {
		return err
	}
	return f.Sync()
}

// logSyncDirs fsyncs folders, so that entries created in them survive a
// crash.
func logSyncDirs(dirs ...string) error {
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

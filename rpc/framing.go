package rpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// MaxMessageBytes is the largest message the runtime reads: 32 MiB, not
// counting the line terminator.
const MaxMessageBytes = 32 << 20

// ErrMessageTooLarge ends a session: a line longer than the limit cannot be
// skipped safely, because its end may never come.
var ErrMessageTooLarge = fmt.Errorf("message exceeds the %d-byte (32 MiB) limit", MaxMessageBytes)

// LineReader reads newline-terminated messages and never holds more than
// max bytes of one line in memory.
type LineReader struct {
	br  *bufio.Reader
	max int
}

// NewLineReader returns a reader of lines of at most max bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next non-blank line without its terminator ("\n" or
// "\r\n"). The slice is the caller's. At the end of the input it returns
// io.EOF; a final line without a newline is still returned first. A line over
// the limit returns ErrMessageTooLarge as soon as the limit is passed, without
// reading the rest of the line.
func (r *LineReader) ReadLine() ([]byte, error) {
	for {
		line, err := r.readRaw()
		if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return nil, err
			}
			continue // blank lines carry nothing
		}
		return line, nil
	}
}

// readRaw consumes input as soon as it arrives (not a buffer-full at a
// time), so an oversized line is detected at its first byte over the limit.
func (r *LineReader) readRaw() ([]byte, error) {
	var buf []byte
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return buf, err
			}
		}
		avail, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexByte(avail, '\n')
		chunk := avail
		if i >= 0 {
			chunk = avail[:i]
		}
		if total := len(buf) + len(chunk); total > r.max {
			// One byte of slack for the "\r" of a "\r\n" terminator.
			if total > r.max+1 || lastByte(buf, chunk) != '\r' {
				return nil, ErrMessageTooLarge
			}
		}
		buf = appendDoubling(buf, chunk, r.max+1)
		if i >= 0 {
			_, _ = r.br.Discard(i + 1)
			return buf, nil
		}
		_, _ = r.br.Discard(len(avail))
	}
}

// appendDoubling appends like append, but doubles the capacity when it
// grows (append grows large slices by a quarter, which copies a long line
// many times over), never past limit.
func appendDoubling(buf, chunk []byte, limit int) []byte {
	if need := len(buf) + len(chunk); need > cap(buf) {
		if buf == nil {
			return append(make([]byte, 0, len(chunk)), chunk...) // most lines fit one read
		}
		grown := make([]byte, len(buf), min(max(2*cap(buf), need), max(limit, need)))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, chunk...)
}

func lastByte(a, b []byte) byte {
	if len(b) > 0 {
		return b[len(b)-1]
	}
	if len(a) > 0 {
		return a[len(a)-1]
	}
	return 0
}

// LineWriter writes one message a line. Concurrent writers are serialised;
// the buffer is flushed when no other writer is waiting, so a burst of
// notifications costs one system call instead of one per message.
type LineWriter struct {
	waiting atomic.Int32
	mu      sync.Mutex
	bw      *bufio.Writer
	err     error
}

// NewLineWriter returns a writer of lines to w.
func NewLineWriter(w io.Writer) *LineWriter {
	return &LineWriter{bw: bufio.NewWriterSize(w, 64<<10)}
}

// WriteLine writes msg and a newline. msg must not contain a newline.
func (w *LineWriter) WriteLine(msg []byte) error {
	w.waiting.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	last := w.waiting.Add(-1) == 0
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.Write(msg); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.err = err
		return err
	}
	if last {
		if err := w.bw.Flush(); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// Flush writes anything still buffered.
func (w *LineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}

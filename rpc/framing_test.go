package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// readerBuffer is the size of LineReader's bufio buffer: how far past the
// limit a reader may look before it notices a line is too long.
const readerBuffer = 64 << 10

// readAll reads lines until an error and returns them with that error.
func readAll(r *LineReader) ([]string, error) {
	var lines []string
	for {
		line, err := r.ReadLine()
		if err != nil {
			return lines, err
		}
		lines = append(lines, string(line))
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	const max = 1024
	tests := []struct {
		name    string
		input   string
		max     int
		want    []string
		wantErr error
	}{
		{
			name:    "newline-terminated lines come back without their terminator",
			input:   "{\"a\":1}\n{\"b\":2}\n",
			want:    []string{`{"a":1}`, `{"b":2}`},
			wantErr: io.EOF,
		},
		{
			name:    "a carriage return before the newline is dropped",
			input:   "{\"a\":1}\r\n{\"b\":2}\r\n",
			want:    []string{`{"a":1}`, `{"b":2}`},
			wantErr: io.EOF,
		},
		{
			name:    "a carriage return inside a line is kept",
			input:   "a\rb\n",
			want:    []string{"a\rb"},
			wantErr: io.EOF,
		},
		{
			name:    "blank and whitespace-only lines are skipped",
			input:   "\n\r\n  \t \n{\"a\":1}\n\n \r\n{\"b\":2}\n\n",
			want:    []string{`{"a":1}`, `{"b":2}`},
			wantErr: io.EOF,
		},
		{
			name:    "a last line without a newline is still returned",
			input:   "{\"a\":1}\n{\"b\":2}",
			want:    []string{`{"a":1}`, `{"b":2}`},
			wantErr: io.EOF,
		},
		{
			name:    "a last line of whitespace without a newline is skipped",
			input:   "{\"a\":1}\n   ",
			want:    []string{`{"a":1}`},
			wantErr: io.EOF,
		},
		{
			name:    "empty input is the end at once",
			input:   "",
			wantErr: io.EOF,
		},
		{
			name:    "a line of exactly the limit passes",
			input:   strings.Repeat("x", max) + "\n",
			want:    []string{strings.Repeat("x", max)},
			wantErr: io.EOF,
		},
		{
			name:    "a line of exactly the limit passes with a CRLF terminator",
			input:   strings.Repeat("x", max) + "\r\n",
			want:    []string{strings.Repeat("x", max)},
			wantErr: io.EOF,
		},
		{
			name:    "a line of exactly the limit passes at the end of input",
			input:   strings.Repeat("x", max),
			want:    []string{strings.Repeat("x", max)},
			wantErr: io.EOF,
		},
		{
			name:    "a line one byte over the limit fails",
			input:   strings.Repeat("x", max+1) + "\n",
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "a line one byte over the limit fails at the end of input",
			input:   strings.Repeat("x", max+1),
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "a line one byte over the limit fails even with a CRLF terminator",
			input:   strings.Repeat("x", max+1) + "\r\n",
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "an oversized line of blanks fails rather than being skipped",
			input:   strings.Repeat(" ", max+1) + "\n",
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "lines before an oversized one are returned first",
			input:   "{\"a\":1}\n" + strings.Repeat("x", max+1) + "\n{\"b\":2}\n",
			want:    []string{`{"a":1}`},
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "a line longer than the buffer is returned whole",
			input:   strings.Repeat("a", 3*readerBuffer+17) + "\n" + strings.Repeat("b", readerBuffer) + "\nc\n",
			max:     4 * readerBuffer,
			want:    []string{strings.Repeat("a", 3*readerBuffer+17), strings.Repeat("b", readerBuffer), "c"},
			wantErr: io.EOF,
		},
		{
			name: "a CRLF split across the buffer boundary counts as the terminator",
			// The buffer fills with the line and its '\r'; the '\n' comes in
			// the next read.
			input:   strings.Repeat("a", readerBuffer-1) + "\r\nb\n",
			max:     readerBuffer - 1,
			want:    []string{strings.Repeat("a", readerBuffer-1), "b"},
			wantErr: io.EOF,
		},
		{
			name:    "a carriage return at the buffer boundary not followed by a newline still counts toward the limit",
			input:   strings.Repeat("a", readerBuffer-1) + "\rb\n",
			max:     readerBuffer - 1,
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "a line that spans the buffer and ends exactly at the limit passes",
			input:   strings.Repeat("a", readerBuffer+5) + "\r\n",
			max:     readerBuffer + 5,
			want:    []string{strings.Repeat("a", readerBuffer+5)},
			wantErr: io.EOF,
		},
		{
			name:    "a line that spans the buffer and passes the limit fails",
			input:   strings.Repeat("a", readerBuffer+6) + "\n",
			max:     readerBuffer + 5,
			wantErr: ErrMessageTooLarge,
		},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"in one read", func(r io.Reader) io.Reader { return r }},
		{"one byte a read", iotest.OneByteReader},
		{"with EOF on the last data", iotest.DataErrReader},
		{"in half reads", iotest.HalfReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+" when read "+rd.name, func(t *testing.T) {
				t.Parallel()
				limit := tt.max
				if limit == 0 {
					limit = max
				}
				r := NewLineReader(rd.wrap(strings.NewReader(tt.input)), limit)
				got, err := readAll(r)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d lines, want %d: %.80q", len(got), len(tt.want), got)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("line %d = %.80q (%d bytes), want %.80q (%d bytes)", i, got[i], len(got[i]), tt.want[i], len(tt.want[i]))
					}
				}
			})
		}
	}
}

func TestLineReaderAtTheRealLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		wantErr error
	}{
		{"a line of exactly 32 MiB passes", MaxMessageBytes, nil},
		{"a line of 32 MiB and one byte fails", MaxMessageBytes + 1, ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			input := append(bytes.Repeat([]byte("x"), tt.size), '\n')
			input = append(input, "{}\n"...)
			r := NewLineReader(bytes.NewReader(input), MaxMessageBytes)
			line, err := r.ReadLine()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(line) != tt.size {
				t.Fatalf("line has %d bytes, want %d", len(line), tt.size)
			}
			next, err := r.ReadLine()
			if err != nil || string(next) != "{}" {
				t.Fatalf("next line = %q, %v; want {}", next, err)
			}
		})
	}
}

// endless yields 'x' and never a newline, and counts what it gave. It ends
// after limit bytes only so that a reader that keeps reading fails the test
// instead of hanging it.
type endless struct {
	n     atomic.Int64
	limit int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n.Load() >= e.limit {
		return 0, io.EOF
	}
	for i := range p {
		p[i] = 'x'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func TestLineReaderStopsReadingAnOversizedLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  int
	}{
		{"a small limit stops within one buffer of the limit", 1024},
		{"the 32 MiB limit stops within one buffer of the limit", MaxMessageBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &endless{limit: int64(tt.max + 4*readerBuffer)}
			_, err := NewLineReader(src, tt.max).ReadLine()
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("error = %v, want ErrMessageTooLarge", err)
			}
			read := src.n.Load()
			if read <= int64(tt.max) || read > int64(tt.max+readerBuffer) {
				t.Fatalf("read %d bytes of an endless line; want more than %d and at most %d", read, tt.max, tt.max+readerBuffer)
			}
		})
	}
}

func TestLineReaderLinesAreTheCallers(t *testing.T) {
	t.Parallel()
	r := NewLineReader(strings.NewReader("first\nsecond\n"), 1024)
	first, err := r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadLine(); err != nil {
		t.Fatal(err)
	}
	if string(first) != "first" {
		t.Fatalf("the first line became %q after the next read", first)
	}
}

func TestLineReaderReturnsReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name  string
		input string
	}{
		{"an error after whole lines is returned after them", "a\nb\n"},
		{"an error in the middle of a line is returned instead of the partial line", "a\nb\npartial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := io.MultiReader(strings.NewReader(tt.input), iotest.ErrReader(boom))
			got, err := readAll(NewLineReader(src, 1024))
			if !errors.Is(err, boom) {
				t.Fatalf("error = %v, want %v", err, boom)
			}
			if fmt.Sprint(got) != "[a b]" {
				t.Fatalf("lines = %q, want [a b]", got)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	t.Parallel()

	t.Run("concurrent writers produce whole lines that are never interleaved", func(t *testing.T) {
		t.Parallel()
		const writers, perWriter = 16, 200
		var out bytes.Buffer // written only under the LineWriter's lock
		w := NewLineWriter(&out)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := range perWriter {
					msg := testMessage(g, i)
					if err := w.WriteLine([]byte(msg)); err != nil {
						t.Errorf("WriteLine: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		// The last writer to leave flushes, so nothing is left buffered.
		lines := strings.Split(out.String(), "\n")
		if last := lines[len(lines)-1]; last != "" {
			t.Fatalf("output does not end with a newline: ...%.40q", last)
		}
		lines = lines[:len(lines)-1]
		if len(lines) != writers*perWriter {
			t.Fatalf("got %d lines, want %d", len(lines), writers*perWriter)
		}
		seen := make(map[string]bool)
		for _, line := range lines {
			var g, i int
			if n, _ := fmt.Sscanf(line, "%d-%d-", &g, &i); n != 2 {
				t.Fatalf("line %.60q is not a whole message", line)
			}
			want := testMessage(g, i)
			if line != want {
				t.Fatalf("line %.60q (%d bytes) is not the message %.60q (%d bytes): writes interleaved", line, len(line), want, len(want))
			}
			if seen[line] {
				t.Fatalf("line %.60q written twice", line)
			}
			seen[line] = true
		}
	})

	t.Run("a lone write reaches the underlying writer without Flush", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		w := NewLineWriter(&out)
		if err := w.WriteLine([]byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "{\"a\":1}\n" {
			t.Fatalf("underlying writer has %q, want the line", got)
		}
	})

	t.Run("a write while another writer waits is left for that writer to flush", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		w := NewLineWriter(&out)
		w.waiting.Add(1) // another writer is queued behind this one
		if err := w.WriteLine([]byte("first")); err != nil {
			t.Fatal(err)
		}
		if out.Len() != 0 {
			t.Fatalf("flushed %q while a writer was waiting", out.String())
		}
		w.waiting.Add(-1)
		if err := w.WriteLine([]byte("second")); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "first\nsecond\n" {
			t.Fatalf("underlying writer has %q, want both lines", got)
		}
	})

	t.Run("Flush writes what is still buffered", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		w := NewLineWriter(&out)
		w.waiting.Add(1) // keep WriteLine from flushing
		if err := w.WriteLine([]byte("held")); err != nil {
			t.Fatal(err)
		}
		if out.Len() != 0 {
			t.Fatalf("flushed %q before Flush", out.String())
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "held\n" {
			t.Fatalf("after Flush the underlying writer has %q, want %q", got, "held\n")
		}
	})

	t.Run("a write error is returned and sticks", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("broken pipe")
		w := NewLineWriter(failingWriter{boom})
		if err := w.WriteLine([]byte("a")); !errors.Is(err, boom) {
			t.Fatalf("first WriteLine = %v, want %v", err, boom)
		}
		if err := w.WriteLine([]byte("b")); !errors.Is(err, boom) {
			t.Fatalf("second WriteLine = %v, want %v", err, boom)
		}
		if err := w.Flush(); !errors.Is(err, boom) {
			t.Fatalf("Flush = %v, want %v", err, boom)
		}
	})
}

// testMessage is writer g's i-th line. Every 40th is larger than the
// buffer, so it goes straight to the underlying writer.
func testMessage(g, i int) string {
	pad := (g + i) % 7 * 100
	if (g+i)%40 == 0 {
		pad = readerBuffer + 100
	}
	return fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("z", pad))
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

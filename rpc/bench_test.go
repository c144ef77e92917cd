package rpc

// Benchmarks of the stdio boundary. Each one runs the runtime's real path and
// a baseline that does the same useful work with no framework, on the same
// kind of pipes and in the same run, so the ratio between the two is the
// result; the absolute figures depend on the machine. docs/benchmarks.md
// holds the figures and the command that produced them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/log"
	"github.com/creachadair/jrpc2"

	"github.com/task-x/runtime/steps/llm"
)

// benchChatEvent is a chat/event notification as a streaming answer sends
// it: one textDelta of a typical size.
type benchChatEvent struct {
	RequestID string              `json:"requestId"`
	Event     benchChatEventDelta `json:"event"`
}

type benchChatEventDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var benchEvent = benchChatEvent{
	RequestID: "req-7f3a9c",
	Event: benchChatEventDelta{
		Type: "textDelta",
		Text: "The handler returns early when the context is cancelled, so \"the reply\" is\nsent at once.\t",
	},
}

// benchNotification is the line the baseline writes: the same envelope jrpc2
// produces for a notification.
type benchNotification struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  benchChatEvent `json:"params"`
}

// benchEchoParams and benchEchoResult are the tiny request of the round-trip
// benchmark, bound as bench/echo on the server under test.
type benchEchoParams struct {
	Text string `json:"text"`
}

type benchEchoResult struct {
	Text string `json:"text"`
}

// benchPipe returns an os.Pipe and closes both ends when the benchmark ends
// (closing an end twice is harmless).
func benchPipe(b *testing.B) (r, w *os.File) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// benchDrain reads r as a client would, one line at a time with bufio, until
// the end of the input. reached is closed once want lines were read (or the
// input ended before); done then yields the number of lines read. The reader
// keeps draining after want so that no writer ever blocks on a full pipe.
func benchDrain(r io.Reader, want int) (reached <-chan struct{}, done <-chan int) {
	reachedCh, doneCh := make(chan struct{}), make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), MaxMessageBytes+2)
		n := 0
		for sc.Scan() {
			if n++; n == want {
				close(reachedCh)
			}
		}
		if n < want {
			close(reachedCh)
		}
		doneCh <- n
	}()
	return reachedCh, doneCh
}

// benchSession is a Server on a pair of pipes, as the binary runs it, seen
// from the client's side.
type benchSession struct {
	in     *os.File      // the client's write end of the server's stdin
	out    *bufio.Reader // the client's reader of the server's stdout
	outR   *os.File
	outW   *os.File
	served chan int // Serve's exit code
	nextID int
}

// startBenchSession serves s on fresh pipes and initializes the session with
// protocolVersion 1.
func startBenchSession(b *testing.B, s *Server) *benchSession {
	b.Helper()
	inR, inW := benchPipe(b)
	outR, outW := benchPipe(b)
	bs := &benchSession{in: inW, out: bufio.NewReaderSize(outR, 64<<10), outR: outR, outW: outW, served: make(chan int, 1)}
	go func() { bs.served <- s.Serve(inR, outW, nil) }()
	reply := bs.call(b, "initialize", `{"protocolVersion":1,"clientInfo":{"name":"bench"}}`)
	if !bytes.Contains(reply, []byte(`"result":`)) {
		b.Fatalf("initialize failed: %s", reply)
	}
	return bs
}

// call sends one request and returns its reply line (valid until the next
// read).
func (bs *benchSession) call(b *testing.B, method, params string) []byte {
	bs.nextID++
	line := benchRequest(nil, bs.nextID, method, params)
	if _, err := bs.in.Write(line); err != nil {
		b.Fatal(err)
	}
	reply, err := bs.out.ReadSlice('\n')
	if err != nil {
		b.Fatalf("reading the reply to %s: %v", method, err)
	}
	return reply
}

// stop ends the session as a client that closes stdin does, and waits for
// Serve to return.
func (bs *benchSession) stop(b *testing.B) {
	b.Helper()
	bs.in.Close() // the end of input acts as exit
	if code := <-bs.served; code != 0 {
		b.Errorf("Serve returned %d, want 0", code)
	}
	bs.outW.Close()
}

// benchRequest appends a request line with an integer id.
func benchRequest(dst []byte, id int, method, params string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, int64(id), 10)
	dst = append(dst, `,"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, '"')
	if params != "" {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, "}\n"...)
}

// newBenchServer returns a server configured as the binary configures it
// (text logger at the default warn level, writing nowhere), with the test's
// own methods bound.
func newBenchServer() *Server {
	redactor := NewRedactor(io.Discard)
	s := NewServer(Options{Logger: NewLogger(redactor, log.WarnLevel), Redactor: redactor})
	s.bind("bench/echo", typed(s, func(_ context.Context, p *benchEchoParams) (benchEchoResult, error) {
		return benchEchoResult(*p), nil
	}))
	return s
}

// BenchmarkNotify measures chat/event notifications from the server to a
// reading client: jrpc2.Server.Notify -> lineChannel.Send -> LineWriter on
// an os.Pipe, against json.Marshal of the same message and one write of its
// line. The time runs until the client has read every line.
func BenchmarkNotify(b *testing.B) {
	b.Run("impl=runtime", func(b *testing.B) {
		s := newBenchServer()
		pushers := make(chan *jrpc2.Server, 1)
		s.bind("bench/pusher", func(ctx context.Context, _ *jrpc2.Request) (any, error) {
			pushers <- jrpc2.ServerFromContext(ctx) // what a handler streaming an answer uses
			return true, nil
		})
		bs := startBenchSession(b, s)
		bs.call(b, "bench/pusher", "")
		srv := <-pushers
		reached, drained := benchDrain(bs.out, b.N)
		ctx := context.Background()

		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := srv.Notify(ctx, "chat/event", benchEvent); err != nil {
				b.Fatal(err)
			}
		}
		<-reached
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")

		bs.stop(b)
		if n := <-drained; n != b.N {
			b.Fatalf("the client read %d lines, want %d notifications", n, b.N)
		}
	})

	b.Run("impl=baseline", func(b *testing.B) {
		r, w := benchPipe(b)
		reached, drained := benchDrain(r, b.N)
		msg := benchNotification{JSONRPC: "2.0", Method: "chat/event", Params: benchEvent}

		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			line, err := json.Marshal(&msg)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				b.Fatal(err)
			}
		}
		<-reached
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")

		w.Close()
		if n := <-drained; n != b.N {
			b.Fatalf("the client read %d lines, want %d notifications", n, b.N)
		}
	})
}

// benchRoundTrips are the requests of BenchmarkRoundTrip: a tiny one through
// strict params decoding, and provider/capabilities as it ships.
var benchRoundTrips = []struct {
	name, method, params string
}{
	{"echo", "bench/echo", `{"text":"hello"}`},
	{"capabilities", "provider/capabilities", ""},
}

// BenchmarkRoundTrip measures one request and its reply as a client sees
// them: write a request line to the server's stdin, read the reply line from
// its stdout. The runtime is a real Server in Serve on os.Pipe pairs, after
// initialize; the baseline is an echo loop on the same pipes that reads a
// line, unmarshals it, marshals the reply and writes it.
func BenchmarkRoundTrip(b *testing.B) {
	for _, rt := range benchRoundTrips {
		b.Run("req="+rt.name+"/impl=runtime", func(b *testing.B) {
			bs := startBenchSession(b, newBenchServer())
			if reply := bs.call(b, rt.method, rt.params); !bytes.Contains(reply, []byte(`"result":`)) {
				b.Fatalf("%s failed: %s", rt.method, reply)
			}
			benchClientLoop(b, bs.in, bs.out, rt.method, rt.params)
			bs.stop(b)
		})

		b.Run("req="+rt.name+"/impl=baseline", func(b *testing.B) {
			inR, inW := benchPipe(b)
			outR, outW := benchPipe(b)
			served := make(chan error, 1)
			go func() { served <- benchEchoLoop(inR, outW) }()
			out := bufio.NewReaderSize(outR, 64<<10)
			benchClientLoop(b, inW, out, rt.method, rt.params)
			inW.Close()
			if err := <-served; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// benchClientLoop is the timed client loop shared by both sides.
func benchClientLoop(b *testing.B, in io.Writer, out *bufio.Reader, method, params string) {
	var line []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		line = benchRequest(line[:0], 1000+i, method, params)
		if _, err := in.Write(line); err != nil {
			b.Fatal(err)
		}
		reply, err := out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if len(reply) < 2 || reply[len(reply)-2] != '}' {
			b.Fatalf("odd reply: %q", reply)
		}
	}
	b.StopTimer()
}

// benchEchoLoop is the baseline server: one line in, one reply out, no
// framing rules, no envelope checks, no lifecycle.
func benchEchoLoop(in io.Reader, out io.Writer) error {
	type request struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  benchEchoParams `json:"params"`
	}
	type reply struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), MaxMessageBytes+2)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return err
		}
		rep := reply{JSONRPC: "2.0", ID: req.ID}
		switch req.Method {
		case "bench/echo":
			rep.Result = benchEchoResult(req.Params)
		case "provider/capabilities":
			rep.Result = llm.Providers()
		default:
			return errors.New("baseline: unknown method " + req.Method)
		}
		line, err := json.Marshal(&rep)
		if err != nil {
			return err
		}
		if _, err := out.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// benchRepeat reads the same bytes over and over, with no system calls, so
// that only the line splitting is measured.
type benchRepeat struct {
	data []byte
	off  int
}

func (r *benchRepeat) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// benchLine returns a JSON-RPC line of exactly size bytes, newline included.
func benchLine(size int) []byte {
	head := `{"jsonrpc":"2.0","method":"workspace/filesChanged","params":{"text":"`
	tail := `"}}` + "\n"
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// BenchmarkReadLine measures LineReader against bufio.Scanner with a buffer
// that already fits the line, in two forms: the Scanner's view of its buffer
// (the least work that splits lines), and a copy of that view, which is what
// ReadLine hands out, because jrpc2 keeps each message after the next read.
func BenchmarkReadLine(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"256B", 256}, {"1MiB", 1 << 20}} {
		line := benchLine(size.bytes)

		b.Run("size="+size.name+"/impl=LineReader", func(b *testing.B) {
			lr := NewLineReader(&benchRepeat{data: line}, MaxMessageBytes)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				got, err := lr.ReadLine()
				if err != nil || len(got) != len(line)-1 {
					b.Fatalf("ReadLine: %d bytes, %v", len(got), err)
				}
			}
		})

		b.Run("size="+size.name+"/impl=Scanner", func(b *testing.B) {
			sc := bufio.NewScanner(&benchRepeat{data: line})
			sc.Buffer(make([]byte, 2<<20), MaxMessageBytes+2)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !sc.Scan() || len(sc.Bytes()) != len(line)-1 {
					b.Fatalf("Scan: %d bytes, %v", len(sc.Bytes()), sc.Err())
				}
			}
		})

		b.Run("size="+size.name+"/impl=ScannerCopy", func(b *testing.B) {
			sc := bufio.NewScanner(&benchRepeat{data: line})
			sc.Buffer(make([]byte, 2<<20), MaxMessageBytes+2)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !sc.Scan() {
					b.Fatal(sc.Err())
				}
				if got := bytes.Clone(sc.Bytes()); len(got) != len(line)-1 {
					b.Fatalf("Scan: %d bytes", len(got))
				}
			}
		})
	}
}

package rpc

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/log"
)

// lineChannel is the jrpc2 channel of the runtime: newline framing with the
// 32 MiB cap, and the envelope rules of the protocol applied before jrpc2
// parses a message. Lines that break those rules are answered here and never
// reach the server.
type lineChannel struct {
	in      io.Closer
	reader  *LineReader
	writer  *LineWriter
	env     envelopeDecoder
	log     *log.Logger
	endOnce sync.Once
	endErr  error         // why the input ended (io.EOF, ErrMessageTooLarge, ...)
	closed  chan struct{} // closed by Close
	open    atomic.Int64  // requests received and not yet answered
	idle    chan struct{} // signalled when open drops to zero

	mu      sync.Mutex
	pending map[idKey]struct{} // ids of our own requests to the client awaiting replies
}

func newLineChannel(in io.ReadCloser, out io.Writer, logger *log.Logger) *lineChannel {
	return &lineChannel{
		in:      in,
		reader:  NewLineReader(in, MaxMessageBytes),
		writer:  NewLineWriter(out),
		log:     logger,
		pending: make(map[idKey]struct{}),
		closed:  make(chan struct{}),
		idle:    make(chan struct{}, 1),
	}
}

// exitMessage stands in for the end of input: stdin closing does what exit
// does, after the messages that came before it.
var exitMessage = []byte(`{"jsonrpc":"2.0","method":"exit"}`)

// Recv returns the next message for jrpc2. Invalid lines are answered here;
// replies to requests the runtime never sent are dropped. When the input
// ends (or breaks the framing), Recv records why and hands jrpc2 an exit
// notification, so the messages already queued are served first; then it
// holds jrpc2's reader until Close (jrpc2 would cancel the open requests at
// once on a read error, and exit gives them up to 5 s to answer).
func (c *lineChannel) Recv() ([]byte, error) {
	for {
		line, err := c.reader.ReadLine()
		if c.isClosed() {
			// jrpc2 must not get a message after Close: its queue is gone.
			if err == nil {
				err = io.ErrClosedPipe
			}
			return nil, err
		}
		if err != nil {
			ended := false
			c.endOnce.Do(func() {
				c.mu.Lock()
				c.endErr, ended = err, true
				c.mu.Unlock()
			})
			if ended {
				return exitMessage, nil
			}
			<-c.closed
			return nil, err
		}
		env, rej := c.env.decode(line)
		if rej != nil {
			c.log.Debug("rejected message", "code", rej.code, "bytes", len(line))
			if err := c.writer.WriteLine(rej.encode()); err != nil {
				return nil, err
			}
			continue
		}
		if env.kind == kindResponse && !c.takePending(env.key) {
			c.log.Warn("dropped a reply to no request of the runtime's", "id", env.key)
			continue
		}
		if env.kind == kindRequest {
			c.open.Add(1)
		}
		if c.log.GetLevel() <= TraceLevel {
			c.log.Log(TraceLevel, "recv", "method", env.method, "id", env.key, "bytes", len(line))
		}
		return line, nil
	}
}

// pushPrefix starts every request the server sends to the client.
var pushPrefix = []byte(`{"jsonrpc":"2.0","id":`)

// Send writes one message. A request of the server's own (a callback such as
// agent/requestApproval) is remembered so that its reply is let through; a
// reply to the client's request is counted off the open requests.
func (c *lineChannel) Send(msg []byte) error {
	if rest, ok := bytes.CutPrefix(msg, pushPrefix); ok {
		if i := bytes.IndexByte(rest, ','); i > 0 && bytes.HasPrefix(rest[i:], []byte(`,"method":`)) {
			if key, ok := canonicalID(rest[:i]); ok {
				c.mu.Lock()
				c.pending[key] = struct{}{}
				c.mu.Unlock()
			}
		} else if c.open.Add(-1) <= 0 {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
	}
	if c.log.GetLevel() <= TraceLevel {
		c.log.Log(TraceLevel, "send", "bytes", len(msg))
	}
	return c.writer.WriteLine(msg)
}

// waitIdle waits until every request received has been answered, or until
// the deadline. It reports whether the requests were all answered.
func (c *lineChannel) waitIdle(deadline <-chan struct{}) bool {
	for c.open.Load() > 0 {
		select {
		case <-c.idle:
		case <-deadline:
			return false
		}
	}
	return true
}

func (c *lineChannel) takePending(key idKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[key]
	delete(c.pending, key)
	return ok
}

// Close stops reading. Replies still in flight can be written until the
// process flushes and exits.
func (c *lineChannel) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return nil
	default:
	}
	close(c.closed)
	return c.in.Close()
}

// inputError says why the input ended, or nil while it has not.
func (c *lineChannel) inputError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

func (c *lineChannel) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

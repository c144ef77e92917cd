package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"github.com/creachadair/jrpc2"
)

// ProtocolVersion is the protocol version this runtime speaks.
const ProtocolVersion = 1

// ServerName is serverInfo.name.
const ServerName = "task-x-runtime"

// Version is serverInfo.version; release builds set it with -ldflags.
var Version = "0.1.0"

// exitGrace is how long exit waits for open replies; finishGrace is the
// least time left for the cancelled ones to be written after it.
const (
	exitGrace   = 5 * time.Second
	finishGrace = 250 * time.Millisecond
)

// Options configure a Server.
type Options struct {
	Logger   *log.Logger
	Redactor *Redactor // every secret params carry is registered here
	// Diagnostics registers the $/diagnostics/* methods (TASK_X_DIAGNOSTICS=1).
	Diagnostics bool
}

// Server is one session of the protocol on a pair of streams.
type Server struct {
	opts     Options
	log      *log.Logger
	redactor *Redactor
	life     *lifecycle
	calls    *inflight
	methods  map[string]methodSpec

	exitOnce sync.Once
	exitCh   chan struct{} // closed by the exit notification

	mu      sync.Mutex
	session *Session // set by initialize
}

// NewServer returns a server ready to Serve.
func NewServer(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = log.New(io.Discard)
	}
	if opts.Redactor == nil {
		opts.Redactor = NewRedactor(io.Discard)
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		redactor: opts.Redactor,
		life:     newLifecycle(),
		calls:    newInflight(),
		exitCh:   make(chan struct{}),
	}
	s.registerMethods()
	return s
}

// Serve runs the session until exit, the end of input, a fatal framing
// error or a value on stop (SIGTERM), and returns the process exit code.
// Then new requests are refused, the open ones get up to 5 s to be answered,
// and whatever still runs is cancelled.
func (s *Server) Serve(in io.ReadCloser, out io.Writer, stop <-chan os.Signal) int {
	ch := newLineChannel(in, out, s.log)
	srv := jrpc2.NewServer(s, &jrpc2.ServerOptions{
		AllowPush:      true,
		DisableBuiltin: true,
		Concurrency:    1 << 16, // long requests (agent runs) must not hold up others
	})
	srv.Start(ch)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()

	select {
	case <-s.exitCh:
	case sig := <-stop:
		s.log.Info("exiting on a signal", "signal", sig.String())
		_ = s.life.fire(evExit)
	}
	code := 0
	if err := ch.inputError(); err != nil && !errors.Is(err, io.EOF) {
		code = 1
		s.log.Error("ending the session", "reason", err.Error())
	}
	grace, cancelGrace := context.WithTimeout(context.Background(), exitGrace)
	defer cancelGrace()
	go func() {
		select {
		case sig := <-stop:
			s.log.Warn("a second signal: not waiting for the open replies", "signal", sig.String())
			cancelGrace()
		case <-grace.Done():
		}
	}()
	if !ch.waitIdle(grace.Done()) {
		s.log.Warn("exiting with requests still unanswered", "open", ch.open.Load())
	}
	s.calls.cancelAll(errShuttingDown, nil)
	// Stopping and flushing can block on a client that no longer reads
	// stdout (jrpc2 writes replies under its lock), so they get the rest of
	// the grace period (at least finishGrace) and no more.
	finished := make(chan struct{})
	go func() {
		srv.Stop()
		<-done
		if err := ch.writer.Flush(); err != nil {
			s.log.Debug("flush at exit", "err", err.Error())
		}
		close(finished)
	}()
	finishBy := time.NewTimer(finishGrace)
	defer finishBy.Stop()
	select {
	case <-finished:
	case <-grace.Done():
		select {
		case <-finished:
		case <-finishBy.C:
			s.log.Warn("exiting before every reply was written: the client is not reading")
		}
	}
	return code
}

// Assign implements jrpc2.Assigner. jrpc2 calls it in the order messages
// arrive, so the lifecycle's admission and the in-flight registry (for
// duplicate ids and $/cancelRequest) see messages in that order too.
func (s *Server) Assign(ctx context.Context, method string) jrpc2.Handler {
	req := jrpc2.InboundRequest(ctx)
	notification := req.IsNotification()
	spec, known := s.methods[method]

	if notification {
		if !known || !spec.notification {
			s.log.Debug("ignored notification", "method", method)
			return ignore
		}
		if adm := s.life.admit(method, true); !adm.run {
			s.log.Debug("ignored notification", "method", method, "phase", s.life.current().String())
			return ignore
		}
		return s.guard(method, spec.handler, nil)
	}

	key, _ := canonicalID([]byte(req.ID()))
	c, ok := s.calls.add(key, method)
	if !ok {
		return fail(jrpc2.Errorf(CodeInvalidRequest, "invalid request: duplicate id %s: a request with this id is still in flight", req.ID()))
	}
	release := func() { s.calls.remove(key, c) }
	adm := s.life.admit(method, false)
	if adm.err != nil {
		release()
		return fail(adm.err)
	}
	handler := spec.handler
	switch {
	case !known:
		handler = func(context.Context, *jrpc2.Request) (any, error) {
			return nil, jrpc2.Errorf(CodeMethodNotFound, "method not found: %s", method)
		}
	case spec.notification:
		handler = func(context.Context, *jrpc2.Request) (any, error) {
			return nil, jrpc2.Errorf(CodeInvalidRequest, "invalid request: %s is a notification; send it without an id", method)
		}
	}
	if adm.wait != nil {
		handler = s.afterInitialize(adm, handler)
	}
	return s.guard(method, handler, &inflightCall{call: c, release: release})
}

// inflightCall ties a running handler to its registry entry.
type inflightCall struct {
	call    *call
	release func()
}

type callKey struct{}

// callFrom returns the registry entry of the request ctx belongs to.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// guard wraps every handler: it binds the request to its cancellation,
// turns a panic into a -32603 reply, maps errors to protocol codes and
// answers -32800 for a request whose context ended.
func (s *Server) guard(method string, h handlerFunc, ic *inflightCall) jrpc2.Handler {
	return func(ctx context.Context, req *jrpc2.Request) (result any, err error) {
		start := time.Now()
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if ic != nil {
			defer ic.release()
			ctx = context.WithValue(ctx, callKey{}, ic.call)
			ic.call.bind(cancel)
		}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				result, err = nil, panicError(method, p)
			}
			s.log.Log(TraceLevel, "handled", "method", method, "id", req.ID(), "ms", time.Since(start).Milliseconds(), "ok", err == nil)
		}()
		result, err = h(ctx, req)
		if ctx.Err() != nil && !req.IsNotification() && err != errShutdownReject && err != errNotInitialized {
			return nil, cancelledError(context.Cause(ctx))
		}
		if err != nil {
			pe := toProtocolError(err)
			s.log.Debug("request failed", "method", method, "code", pe.Code, "message", pe.Message)
			return nil, pe
		}
		return result, nil
	}
}

// afterInitialize holds a request that arrived while initialize was being
// answered until its outcome is known.
func (s *Server) afterInitialize(adm admission, h handlerFunc) handlerFunc {
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		select {
		case <-adm.wait.done:
		case <-ctx.Done():
			select {
			case <-adm.wait.done: // answered too: its verdict comes first
			default:
				return nil, ctx.Err()
			}
		}
		if rej := s.life.afterInitialize(adm.wait, adm.arrival); rej != nil {
			return nil, rej
		}
		return h(ctx, req)
	}
}

func ignore(context.Context, *jrpc2.Request) (any, error) { return nil, nil }

func fail(err *jrpc2.Error) jrpc2.Handler {
	return func(context.Context, *jrpc2.Request) (any, error) { return nil, err }
}

package llmtest

import (
	"encoding/json"
	"net/http"
	"time"
)

// dialect is what differs between the four APIs: paths, authentication,
// the events of a stream, the error shapes and the model endpoints.
type dialect interface {
	chatPath() string
	baseURL(root string) string
	authorized(h http.Header, key string) bool
	unauthorized() HTTPError
	// precheck is the error the real API gives any request before looking
	// at it (a missing version header); nil lets the request through.
	precheck(r *http.Request) *HTTPError
	// streaming reports whether the chat request asks for a stream.
	streaming(body map[string]any) bool
	streamContentType() string
	// frames is the complete stream of a turn.
	frames(c *call) []frame
	// malformed is one frame of the kind's framing whose JSON is broken.
	malformed(c *call) []byte
	// streamError is the kind's in-stream error; seq is the number of
	// frames sent before it.
	streamError(c *call, message string, seq int) [][]byte
	// reply is the whole answer of a request that did not ask for a stream.
	reply(c *call) json.RawMessage
	errorBody(e HTTPError) json.RawMessage
	// serveModels answers the model endpoints; false means r is none.
	serveModels(s *Server, w http.ResponseWriter, r *http.Request, body []byte) bool
}

// errorHeaderer is a dialect that adds headers to its error replies.
type errorHeaderer interface {
	errorHeaders(h http.Header, e HTTPError)
}

func dialectFor(k Kind) dialect {
	switch k {
	case Anthropic:
		return anthropic{}
	case OpenAI:
		return openai{}
	case OpenAICompatible:
		return compat{}
	case Ollama:
		return ollama{}
	}
	return nil
}

// frame is one event of a stream, already framed for the wire.
type frame struct {
	b []byte
	// delta marks a text delta; Malformed and StreamError go after the first.
	delta bool
}

// plan is the list of frames a turn sends: the kind's stream with the
// scripted faults put in after the first text delta.
func (s *Server) plan(c *call) [][]byte {
	fs := s.d.frames(c)
	// After the first text delta; without text, after the first event,
	// unless that event is the only one and ends the stream (an empty
	// Ollama turn), which the faults must precede.
	at := 0
	if len(fs) == 1 {
		at = -1
	}
	for i, f := range fs {
		if f.delta {
			at = i
			break
		}
	}
	out := make([][]byte, 0, len(fs)+2)
	for _, f := range fs[:at+1] {
		out = append(out, f.b)
	}
	if c.turn.Malformed {
		out = append(out, s.d.malformed(c))
	}
	if c.turn.StreamError != "" {
		return append(out, s.d.streamError(c, c.turn.StreamError, len(out))...)
	}
	for _, f := range fs[at+1:] {
		out = append(out, f.b)
	}
	return out
}

// play streams frames with the turn's timing, flushing after each, and cuts
// the connection where the turn says so.
func (s *Server) play(w http.ResponseWriter, r *http.Request, rec *Request, turn Turn, frames [][]byte) {
	h := w.Header()
	h.Set("Content-Type", s.d.streamContentType())
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, f := range frames {
		if _, err := w.Write(f); err != nil {
			s.lost(rec)
			return
		}
		if err := rc.Flush(); err != nil {
			s.lost(rec)
			return
		}
		if turn.CutAfter > 0 && (i+1 == turn.CutAfter || i == len(frames)-1) {
			// Without the closing chunk of the chunked body the client
			// sees io.ErrUnexpectedEOF, as when a proxy drops the line.
			if conn, _, err := rc.Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if i == len(frames)-1 {
			return
		}
		wait := turn.Delay
		if i == 0 {
			wait += turn.Gap
		}
		if !s.pause(r, rec, wait) {
			return
		}
	}
}

// pause waits d. It reports false, marking the request closed by its
// client, when the client goes away first, and false when the test ends.
func (s *Server) pause(r *http.Request, rec *Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-s.done:
		return false
	case <-r.Context().Done():
		s.lost(rec)
		return false
	}
}

// lost records that the client went away before the reply finished, unless
// the reason is the server shutting down at the end of the test.
func (s *Server) lost(rec *Request) {
	select {
	case <-s.done:
	default:
		s.markClosed(rec)
	}
}

package rpc

import (
	"context"
	"errors"
	"time"
)

// DiagnosticsEnv turns on the $/diagnostics/* methods: requests with a known
// duration and a deliberate panic, for exercising cancellation, shutdown and
// panic isolation from a client. They are off unless it is "1".
const DiagnosticsEnv = "TASK_X_DIAGNOSTICS"

// SleepParams are $/diagnostics/sleep's params.
type SleepParams struct {
	Ms           int  `json:"ms"`
	IgnoreCancel bool `json:"ignoreCancel,omitempty"`
}

// Validate bounds the sleep.
func (p *SleepParams) Validate() error {
	if p.Ms < 0 || p.Ms > 600_000 {
		return errors.New("ms: must be 0 to 600000")
	}
	return nil
}

func (s *Server) bindDiagnostics() {
	s.bind("$/diagnostics/sleep", typed(s, s.diagnosticSleep))
	s.bind("$/diagnostics/panic", typed(s, s.diagnosticPanic))
}

// diagnosticSleep waits ms milliseconds, or until cancelled unless
// ignoreCancel is set (a handler that does not honour cancellation).
func (s *Server) diagnosticSleep(ctx context.Context, p *SleepParams) (map[string]int, error) {
	timer := time.NewTimer(time.Duration(p.Ms) * time.Millisecond)
	defer timer.Stop()
	if p.IgnoreCancel {
		<-timer.C
		return map[string]int{"slept": p.Ms}, nil
	}
	select {
	case <-timer.C:
		return map[string]int{"slept": p.Ms}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) diagnosticPanic(context.Context, *noParams) (any, error) {
	panic("deliberate panic from $/diagnostics/panic")
}

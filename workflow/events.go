package workflow

import "time"

// Status is the state of a step, or of a whole run.
type Status string

// The statuses. A step goes pending -> running -> succeeded | failed |
// cancelled, or pending -> skipped; a retried step goes running ->
// running with the next attempt. A run goes pending -> running ->
// succeeded | failed | cancelled.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped"
)

// Terminal reports whether a status is final.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusSkipped:
		return true
	}
	return false
}

// RunKind is the Kind of the events that describe the run itself; their
// StepID is empty.
const RunKind Kind = "run"

// Event is one transition of a step (or of the run, with Kind "run" and no
// StepID). Seq counts a run's events from 0 with no gaps.
type Event struct {
	RunID   string    `json:"runId"`
	StepID  StepID    `json:"stepId,omitempty"`
	Kind    Kind      `json:"kind"`
	From    Status    `json:"from"`
	To      Status    `json:"to"`
	Attempt int       `json:"attempt,omitempty"`
	Error   string    `json:"error,omitempty"`
	Reason  string    `json:"reason,omitempty"` // why a step was skipped, or a run interrupted
	Seq     uint64    `json:"seq"`
	TS      time.Time `json:"ts"`
}

// Sink receives a run's events in seq order, from one goroutine at a time.
// It must not block for long: the scheduler waits for it (state
// transitions are never dropped).
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit calls f.
func (f SinkFunc) Emit(e Event) { f(e) }

package workflow

import (
	"errors"
	"fmt"
	"strings"
)

// The engine's sentinel errors; match them with errors.Is.
var (
	// ErrEmptyID: a step has no id.
	ErrEmptyID = errors.New("empty step id")
	// ErrDuplicateID: two steps of a run share an id.
	ErrDuplicateID = errors.New("duplicate step id")
	// ErrUnknownDependency: a step depends on an id that is not a step of
	// the run.
	ErrUnknownDependency = errors.New("unknown dependency")
	// ErrCycle: the steps depend on each other in a cycle (a *CycleError
	// names it).
	ErrCycle = errors.New("dependency cycle")
	// ErrUnknownStep: CancelStep named no step of the run.
	ErrUnknownStep = errors.New("unknown step")
	// ErrRunEnded: Expand came after every step of the run had ended.
	ErrRunEnded = errors.New("run has ended")
	// ErrKindNotAvailable: no runner is registered for a step's kind; the
	// step fails with it when it would run.
	ErrKindNotAvailable = errors.New("not available")
	// ErrTimeout: an attempt ran past its step's Timeout.
	ErrTimeout = errors.New("timed out")
)

// StepError says which step of a set given to Validate, Start or Expand
// broke a rule, and which rule (Err wraps a sentinel above).
type StepError struct {
	Index int // the step's position in the set
	Step  StepID
	Err   error
}

func (e *StepError) Error() string {
	if e.Step == "" {
		return fmt.Sprintf("step %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("step %q: %v", e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// CycleError names a dependency cycle in the order the steps would run,
// the first step repeated at the end: a -> b -> c -> a means b depends on
// a, c on b and a on c.
type CycleError struct {
	Cycle []StepID
}

func (e *CycleError) Error() string {
	var b strings.Builder
	b.WriteString("dependency cycle: ")
	for i, id := range e.Cycle {
		if i > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(string(id))
	}
	b.WriteString(" (a step cannot wait for itself)")
	return b.String()
}

// Is makes errors.Is(err, ErrCycle) true.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// PanicError is the failure of a step whose runner panicked.
type PanicError struct {
	Value any
	Stack []byte // the runner's goroutine stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// permanentError marks an error a retry cannot help.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a runner's error as one that retrying cannot fix (bad
// input, a refused permission): the step fails at once whatever its
// RetryPolicy says. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// kindNotAvailable is the failure of a step whose kind has no runner.
func kindNotAvailable(kind Kind) error {
	return fmt.Errorf("step kind %q is %w (no runner is registered for it)", kind, ErrKindNotAvailable)
}

package workflow

// stepState is a step's (or the run's) lifecycle state inside the
// scheduler: a small integer so the hot path compares bytes, not strings.
// Status is its name on the wire.
type stepState uint8

const (
	statePending stepState = iota
	stateRunning
	stateSucceeded
	stateFailed
	stateCancelled
	stateSkipped
	stateCount
)

var stateStatus = [stateCount]Status{
	statePending:   StatusPending,
	stateRunning:   StatusRunning,
	stateSucceeded: StatusSucceeded,
	stateFailed:    StatusFailed,
	stateCancelled: StatusCancelled,
	stateSkipped:   StatusSkipped,
}

// Status names the state.
func (s stepState) Status() Status { return stateStatus[s] }

func (s stepState) terminal() bool { return s >= stateSucceeded }

// transitions is the lifecycle, the only moves the scheduler makes:
//
//	pending -> running -> succeeded | failed | cancelled
//	pending -> skipped
//	running -> running   (a retry: the next attempt)
//
// A run moves through the same table (pending -> running -> succeeded |
// failed | cancelled), and never by running -> running or to skipped.
var transitions = [stateCount][stateCount]bool{
	statePending: {stateRunning: true, stateSkipped: true},
	stateRunning: {
		stateRunning:   true,
		stateSucceeded: true,
		stateFailed:    true,
		stateCancelled: true,
	},
}

// canMove reports whether from -> to is a transition of the lifecycle.
func canMove(from, to stepState) bool { return transitions[from][to] }

package workflow

import "testing"

func TestTransitionTableAllowsExactlyTheLifecycle(t *testing.T) {
	t.Parallel()
	allowed := map[[2]stepState]bool{
		{statePending, stateRunning}:   true,
		{statePending, stateSkipped}:   true,
		{stateRunning, stateRunning}:   true, // a retry
		{stateRunning, stateSucceeded}: true,
		{stateRunning, stateFailed}:    true,
		{stateRunning, stateCancelled}: true,
	}
	for from := range stateCount {
		for to := range stateCount {
			want := allowed[[2]stepState{from, to}]
			if got := canMove(from, to); got != want {
				t.Errorf("%s -> %s: allowed %v, want %v", from.Status(), to.Status(), got, want)
			}
		}
	}
}

func TestStatesNameTheirStatusAndKnowWhichAreTerminal(t *testing.T) {
	t.Parallel()
	for s := range stateCount {
		if got, want := s.terminal(), s.Status().Terminal(); got != want {
			t.Errorf("%s: terminal %v, Status.Terminal %v", s.Status(), got, want)
		}
		if s.Status() == "" {
			t.Errorf("state %d has no status", s)
		}
	}
}

package rpc

import (
	"fmt"
	"testing"

	"github.com/creachadair/jrpc2"
)

var (
	allPhases = []Phase{PhaseNew, PhaseInitializing, PhaseReady, PhaseShuttingDown, PhaseExited}
	allEvents = []lifecycleEvent{evInitialize, evInitialized, evInitFailed, evShutdown, evExit}
)

// lifecycleIn returns a lifecycle in phase p, as if it had got there by the
// table: in PhaseInitializing an initialize attempt is open.
func lifecycleIn(p Phase) *lifecycle {
	l := newLifecycle()
	l.phase = p
	if p == PhaseInitializing {
		l.attempt = &initAttempt{done: make(chan struct{})}
	}
	return l
}

func TestLifecycleTableCoversEveryPhase(t *testing.T) {
	t.Parallel()
	if len(lifecycleTable) != len(allPhases) || len(phaseNames) != len(allPhases) || len(eventNames) != len(allEvents) {
		t.Fatalf("the table has %d phases, the names %d phases and %d events; the test walks %d phases and %d events",
			len(lifecycleTable), len(phaseNames), len(eventNames), len(allPhases), len(allEvents))
	}
	for _, p := range allPhases {
		if _, ok := lifecycleTable[p]; !ok {
			t.Errorf("phase %s has no row in the table", p)
		}
	}
}

func TestLifecycleTransitions(t *testing.T) {
	t.Parallel()
	// The protocol's transitions, written out independently of the table so
	// that a change to either shows up here.
	want := map[Phase]map[lifecycleEvent]Phase{
		PhaseNew:          {evInitialize: PhaseInitializing, evExit: PhaseExited},
		PhaseInitializing: {evInitialized: PhaseReady, evInitFailed: PhaseNew, evExit: PhaseExited},
		PhaseReady:        {evShutdown: PhaseShuttingDown, evExit: PhaseExited},
		PhaseShuttingDown: {evExit: PhaseExited},
		PhaseExited:       {},
	}
	for _, from := range allPhases {
		for _, ev := range allEvents {
			to, allowed := want[from][ev]
			name := fmt.Sprintf("%s in phase %s is refused", ev, from)
			if allowed {
				name = fmt.Sprintf("%s in phase %s moves to %s", ev, from, to)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if tableTo, tableAllowed := lifecycleTable[from][ev]; tableAllowed != allowed || tableTo != to {
					t.Errorf("lifecycleTable[%s][%s] = %s, %v; want %s, %v", from, ev, tableTo, tableAllowed, to, allowed)
				}
				l := lifecycleIn(from)
				err := l.fire(ev)
				if allowed {
					if err != nil {
						t.Fatalf("fire(%s) = %v, want nil", ev, err)
					}
					if got := l.current(); got != to {
						t.Fatalf("phase after fire(%s) = %s, want %s", ev, got, to)
					}
					return
				}
				if err == nil {
					t.Fatalf("fire(%s) = nil, want an error", ev)
				}
				if got := l.current(); got != from {
					t.Fatalf("a refused fire(%s) moved the phase from %s to %s", ev, from, got)
				}
			})
		}
	}
}

func TestLifecycleInitializeOpensAnAttempt(t *testing.T) {
	t.Parallel()
	l := newLifecycle()
	if l.current() != PhaseNew {
		t.Fatalf("a new lifecycle is in phase %s, want new", l.current())
	}
	if err := l.fire(evInitialize); err != nil {
		t.Fatal(err)
	}
	if l.attempt == nil || l.attempt.done == nil {
		t.Fatal("initialize did not open an attempt for requests to wait on")
	}
}

func TestLifecycleAdmission(t *testing.T) {
	t.Parallel()
	type verdict struct {
		run  bool
		wait bool
		code jrpc2.Code // a refusal; 0 when none
	}
	var (
		run            = verdict{run: true}
		wait           = verdict{wait: true}
		dropped        = verdict{}
		notInitialized = verdict{code: CodeNotInitialized}
		invalid        = verdict{code: CodeInvalidRequest}
	)
	type message struct {
		method       string
		notification bool
	}
	var (
		initialize   = message{methodInitialize, false}
		shutdown     = message{methodShutdown, false}
		otherRequest = message{"workspace/open", false}
		exit         = message{methodExit, true}
		cancel       = message{methodCancelRequest, true}
		otherNotif   = message{"workspace/filesChanged", true}
	)
	describe := func(m message) string {
		if m.notification {
			return "the " + m.method + " notification"
		}
		return "a " + m.method + " request"
	}
	tests := []struct {
		phase Phase
		msg   message
		want  verdict
		next  Phase
	}{
		{PhaseNew, initialize, run, PhaseInitializing},
		{PhaseNew, shutdown, notInitialized, PhaseNew},
		{PhaseNew, otherRequest, notInitialized, PhaseNew},
		{PhaseNew, exit, run, PhaseExited},
		{PhaseNew, cancel, run, PhaseNew},
		{PhaseNew, otherNotif, dropped, PhaseNew},

		{PhaseInitializing, initialize, invalid, PhaseInitializing},
		{PhaseInitializing, shutdown, wait, PhaseInitializing},
		{PhaseInitializing, otherRequest, wait, PhaseInitializing},
		{PhaseInitializing, exit, run, PhaseExited},
		{PhaseInitializing, cancel, run, PhaseInitializing},
		{PhaseInitializing, otherNotif, dropped, PhaseInitializing},

		{PhaseReady, initialize, invalid, PhaseReady},
		{PhaseReady, shutdown, run, PhaseShuttingDown},
		{PhaseReady, otherRequest, run, PhaseReady},
		{PhaseReady, exit, run, PhaseExited},
		{PhaseReady, cancel, run, PhaseReady},
		{PhaseReady, otherNotif, run, PhaseReady},

		{PhaseShuttingDown, initialize, invalid, PhaseShuttingDown},
		{PhaseShuttingDown, shutdown, invalid, PhaseShuttingDown},
		{PhaseShuttingDown, otherRequest, invalid, PhaseShuttingDown},
		{PhaseShuttingDown, exit, run, PhaseExited},
		{PhaseShuttingDown, cancel, run, PhaseShuttingDown},
		{PhaseShuttingDown, otherNotif, dropped, PhaseShuttingDown},

		{PhaseExited, initialize, invalid, PhaseExited},
		{PhaseExited, shutdown, invalid, PhaseExited},
		{PhaseExited, otherRequest, invalid, PhaseExited},
		{PhaseExited, exit, run, PhaseExited},
		{PhaseExited, cancel, run, PhaseExited},
		{PhaseExited, otherNotif, dropped, PhaseExited},
	}
	// Every phase meets every kind of message.
	seen := make(map[Phase]int)
	for _, tt := range tests {
		seen[tt.phase]++
	}
	for _, p := range allPhases {
		if seen[p] != 6 {
			t.Fatalf("phase %s has %d admission cases, want 6", p, seen[p])
		}
	}
	for _, tt := range tests {
		outcome := "runs"
		switch {
		case tt.want.wait:
			outcome = "waits for initialize"
		case tt.want.code != 0:
			outcome = fmt.Sprintf("fails with %d", tt.want.code)
		case !tt.want.run:
			outcome = "is dropped"
		}
		t.Run(fmt.Sprintf("%s in phase %s %s", describe(tt.msg), tt.phase, outcome), func(t *testing.T) {
			t.Parallel()
			l := lifecycleIn(tt.phase)
			adm := l.admit(tt.msg.method, tt.msg.notification)
			got := verdict{run: adm.run, wait: adm.wait != nil}
			if adm.err != nil {
				got.code = adm.err.Code
			}
			if got != tt.want {
				t.Errorf("admit = %+v (err %v), want %+v", got, adm.err, tt.want)
			}
			if got := l.current(); got != tt.next {
				t.Errorf("phase after admit = %s, want %s", got, tt.next)
			}
		})
	}
}

func TestLifecycleInitializeAttempt(t *testing.T) {
	t.Parallel()

	// initializing starts an initialize and returns its admission.
	initializing := func(t *testing.T) *lifecycle {
		t.Helper()
		l := newLifecycle()
		if adm := l.admit(methodInitialize, false); !adm.run {
			t.Fatalf("initialize was not admitted: %+v", adm)
		}
		return l
	}
	mustWait := func(t *testing.T, l *lifecycle, method string) admission {
		t.Helper()
		adm := l.admit(method, false)
		if adm.wait == nil {
			t.Fatalf("%s during initialize: admission %+v, want it to wait", method, adm)
		}
		return adm
	}
	released := func(a *initAttempt) bool {
		select {
		case <-a.done:
			return true
		default:
			return false
		}
	}
	codeOf := func(err *jrpc2.Error) jrpc2.Code {
		if err == nil {
			return 0
		}
		return err.Code
	}

	t.Run("requests that arrive while initializing wait until it succeeds, then run", func(t *testing.T) {
		t.Parallel()
		l := initializing(t)
		first := mustWait(t, l, "workspace/open")
		second := mustWait(t, l, "agent/run")
		if first.wait != second.wait {
			t.Fatal("requests during one initialize wait on different attempts")
		}
		if first.arrival != 1 || second.arrival != 2 {
			t.Fatalf("arrivals = %d, %d; want 1, 2", first.arrival, second.arrival)
		}
		if released(first.wait) {
			t.Fatal("waiting requests were released before initialize was answered")
		}
		if err := l.settleInitialize(true); err != nil {
			t.Fatal(err)
		}
		if !released(first.wait) {
			t.Fatal("settleInitialize(true) did not release the waiting requests")
		}
		for _, adm := range []admission{first, second} {
			if err := l.afterInitialize(adm.wait, adm.arrival); err != nil {
				t.Errorf("request %d after a successful initialize: %v, want it to run", adm.arrival, err)
			}
		}
		if got := l.current(); got != PhaseReady {
			t.Fatalf("phase = %s, want ready", got)
		}
		if l.attempt != nil {
			t.Fatal("the attempt is still open after settling")
		}
	})

	t.Run("a request after a shutdown that arrived while initializing is refused with -32600", func(t *testing.T) {
		t.Parallel()
		l := initializing(t)
		before := mustWait(t, l, "workspace/open")
		shutdown := mustWait(t, l, methodShutdown)
		after := mustWait(t, l, "agent/run")
		secondShutdown := mustWait(t, l, methodShutdown)
		if err := l.settleInitialize(true); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			adm  admission
			want jrpc2.Code
		}{
			{"the request before the shutdown runs", before, 0},
			{"the shutdown runs", shutdown, 0},
			{"the request after the shutdown is refused", after, CodeInvalidRequest},
			{"a second shutdown is refused", secondShutdown, CodeInvalidRequest},
		}
		for _, tt := range tests {
			if got := codeOf(l.afterInitialize(tt.adm.wait, tt.adm.arrival)); got != tt.want {
				t.Errorf("%s: code %d, want %d", tt.name, got, tt.want)
			}
		}
		if got := l.current(); got != PhaseShuttingDown {
			t.Fatalf("phase = %s, want shuttingDown: the shutdown that waited must take effect", got)
		}
		if adm := l.admit("workspace/open", false); codeOf(adm.err) != CodeInvalidRequest {
			t.Fatalf("a request after settling: admission %+v, want -32600", adm)
		}
	})

	t.Run("requests that waited for a failed initialize are refused with -32003", func(t *testing.T) {
		t.Parallel()
		l := initializing(t)
		waiting := mustWait(t, l, "workspace/open")
		shutdown := mustWait(t, l, methodShutdown)
		if err := l.settleInitialize(false); err != nil {
			t.Fatal(err)
		}
		if !released(waiting.wait) {
			t.Fatal("settleInitialize(false) did not release the waiting requests")
		}
		for _, adm := range []admission{waiting, shutdown} {
			if got := codeOf(l.afterInitialize(adm.wait, adm.arrival)); got != CodeNotInitialized {
				t.Errorf("request %d: code %d, want %d", adm.arrival, got, CodeNotInitialized)
			}
		}
		if got := l.current(); got != PhaseNew {
			t.Fatalf("phase = %s, want new: a failed initialize may be sent again", got)
		}
		if adm := l.admit(methodInitialize, false); !adm.run {
			t.Fatalf("initialize after a failed one: admission %+v, want it to run", adm)
		}
	})

	t.Run("requests that waited still run when exit arrives before initialize is answered", func(t *testing.T) {
		t.Parallel()
		l := initializing(t)
		waiting := mustWait(t, l, "workspace/open")
		if adm := l.admit(methodExit, true); !adm.run {
			t.Fatalf("exit: admission %+v, want it to run", adm)
		}
		if err := l.settleInitialize(true); err == nil {
			t.Fatal("settleInitialize after exit = nil, want the refused transition reported")
		}
		if !released(waiting.wait) {
			t.Fatal("the waiting request was not released")
		}
		if err := l.afterInitialize(waiting.wait, waiting.arrival); err != nil {
			t.Fatalf("the waiting request: %v, want it to run", err)
		}
		if got := l.current(); got != PhaseExited {
			t.Fatalf("phase = %s, want exited", got)
		}
	})

	t.Run("a second initialize while the first is answered is refused and does not wait", func(t *testing.T) {
		t.Parallel()
		l := initializing(t)
		adm := l.admit(methodInitialize, false)
		if adm.wait != nil || codeOf(adm.err) != CodeInvalidRequest {
			t.Fatalf("admission %+v, want -32600", adm)
		}
		if waiting := mustWait(t, l, "workspace/open"); waiting.arrival != 1 {
			t.Fatalf("the refused initialize counted as an arrival: next arrival is %d, want 1", waiting.arrival)
		}
	})
}

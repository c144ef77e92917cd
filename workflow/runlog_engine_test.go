package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// TestTheLogOfARealRunReplaysTheEventsEmitted runs the engine with the log
// and a recorder as sinks, through a failure, a skip and an expansion, and
// checks that replaying the log gives exactly the events the run emitted.
func TestTheLogOfARealRunReplaysTheEventsEmitted(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	log, err := OpenLog(dataDir, "real-run")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	reg := NewRegistry()
	reg.Register(testKind, func(ctx context.Context, sc *StepContext) (any, error) {
		switch sc.Step.ID {
		case "build":
			return nil, errors.New("compile error")
		case "plan":
			return "planned", sc.Expand(Step{ID: "extra", Kind: testKind, Deps: []StepID{"plan"}})
		}
		return string(sc.Step.ID), nil
	})
	steps := []Step{
		{ID: "plan", Kind: testKind},
		{ID: "build", Kind: testKind, Deps: []StepID{"plan"}},
		{ID: "test", Kind: testKind, Deps: []StepID{"build"}},
		{ID: "docs", Kind: testKind, Deps: []StepID{"plan"}},
	}
	run, err := Start(context.Background(), "real-run", steps, Options{MaxParallel: 2, Registry: reg, Sinks: []Sink{log, rec}})
	if err != nil {
		t.Fatal(err)
	}
	res := run.Wait()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed || res.Steps["test"].Status != StatusSkipped || res.Steps["extra"].Status != StatusSucceeded {
		t.Fatalf("unexpected result %+v", res)
	}
	replayed, err := Replay(dataDir, "real-run", 0)
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	emitted := append([]Event(nil), rec.events...)
	rec.mu.Unlock()
	if len(replayed) != len(emitted) {
		t.Fatalf("replayed %d events, emitted %d", len(replayed), len(emitted))
	}
	for i := range emitted {
		a, _ := json.Marshal(emitted[i])
		b, _ := json.Marshal(replayed[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: replayed %s, emitted %s", i, b, a)
		}
		if emitted[i].Seq != uint64(i) {
			t.Fatalf("event %d has seq %d", i, emitted[i].Seq)
		}
	}
	// Replay from the middle gives the tail.
	tail, err := Replay(dataDir, "real-run", 5)
	if err != nil || len(tail) != len(emitted)-5 || tail[0].Seq != 5 {
		t.Fatalf("replay from seq 5: %d events, %v", len(tail), err)
	}
}

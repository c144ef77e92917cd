package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/task-x/runtime/workflow"
)

const planUsage = `usage: taskx plan <command> FILE [flags]     (FILE "-" reads standard input)

commands:
  validate FILE                     check a plan; print each fault with its JSON path
  graph FILE [--format dot|mermaid] draw the plan's graph on standard output (default dot)
  run FILE [--json] [--max-parallel N] [--data-dir DIR]
                                    run the plan: a live view on a terminal, JSON lines
                                    of events with --json or when the output is not one
`

// plan runs `taskx plan validate|graph|run`.
func plan(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, planUsage)
		return 2
	}
	switch args[0] {
	case "validate":
		return planValidate(args[1:])
	case "graph":
		return planGraph(args[1:])
	case "run":
		return planRun(args[1:])
	case "help", "-h", "--help":
		fmt.Print(planUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "taskx plan: unknown command %q\n\n%s", args[0], planUsage)
	return 2
}

func planValidate(args []string) int {
	fs := flag.NewFlagSet("plan validate", flag.ContinueOnError)
	file, code, ok := planFileArg(fs, args)
	if !ok {
		return code
	}
	p, code := loadPlan(file, os.Stderr)
	if code != 0 {
		return code
	}
	fmt.Printf("ok: %s is a valid plan of %d steps\n", file, len(p.Steps))
	return 0
}

func planGraph(args []string) int {
	fs := flag.NewFlagSet("plan graph", flag.ContinueOnError)
	format := fs.String("format", "dot", "dot (Graphviz) or mermaid")
	file, code, ok := planFileArg(fs, args)
	if !ok {
		return code
	}
	var write func(io.Writer, []workflow.Step) error
	switch *format {
	case "dot":
		write = workflow.WriteDOT
	case "mermaid":
		write = workflow.WriteMermaid
	default:
		fmt.Fprintf(os.Stderr, "taskx plan graph: --format %q: use dot or mermaid\n", *format)
		return 2
	}
	p, code := loadPlan(file, os.Stderr)
	if code != 0 {
		return code
	}
	steps, err := workflow.Compile(p)
	if err == nil {
		err = write(os.Stdout, steps)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskx plan graph:", err)
		return 1
	}
	return 0
}

func planRun(args []string) int {
	fs := flag.NewFlagSet("plan run", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print the run's events as JSON lines, even on a terminal")
	maxParallel := fs.Int("max-parallel", 0, fmt.Sprintf("steps run at once, 1 to %d (default %d)", workflow.MaxMaxParallel, workflow.DefaultMaxParallel))
	dataDir := fs.String("data-dir", "", "where runs/<runId>/events.jsonl is written (default: $XDG_STATE_HOME/task-x or ~/.local/state/task-x)")
	file, code, ok := planFileArg(fs, args)
	if !ok {
		return code
	}
	if *maxParallel < 0 || *maxParallel > workflow.MaxMaxParallel {
		fmt.Fprintf(os.Stderr, "taskx plan run: --max-parallel %d: use 1 to %d\n", *maxParallel, workflow.MaxMaxParallel)
		return 2
	}
	p, code := loadPlan(file, os.Stderr)
	if code != 0 {
		return code
	}
	steps, err := workflow.Compile(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskx plan run:", err)
		return 1
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = defaultDataDir(); err != nil {
			fmt.Fprintln(os.Stderr, "taskx plan run:", err)
			return 1
		}
	}
	marked, err := workflow.MarkInterrupted(dir, time.Now())
	if err != nil {
		// Those runs stay as they are; this one can still run and be logged.
		fmt.Fprintln(os.Stderr, "taskx plan run: warning: marking interrupted runs:", err)
	}
	if len(marked) > 0 {
		fmt.Fprintf(os.Stderr, "taskx plan run: %d earlier %s left running by a killed process, now marked failed (interrupted): %s\n",
			len(marked), plural(len(marked), "run was", "runs were"), strings.Join(marked, ", "))
	}
	runID := newRunID()
	runLog, err := workflow.OpenLog(dir, runID)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskx plan run:", err)
		return 1
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()

	// Until the team issue registers the subagent runner, the registry is
	// empty and every root step fails saying its kind is not available.
	opts := workflow.Options{MaxParallel: *maxParallel, Registry: workflow.NewRegistry(), Sinks: []workflow.Sink{runLog}}
	var view *termView
	summaryOut := io.Writer(os.Stdout)
	if *jsonOut || !isTerminal(os.Stdout) {
		opts.Sinks = append(opts.Sinks, &jsonLines{w: os.Stdout})
		summaryOut = os.Stderr // stdout holds JSON lines only
	} else {
		view = newTermView(os.Stdout, runID, steps)
		view.width = func() int { return terminalWidth(os.Stdout) }
		opts.Sinks = append(opts.Sinks, view)
		view.Start()
	}

	started := time.Now()
	run, err := workflow.Start(ctx, runID, steps, opts)
	if err != nil {
		if view != nil {
			view.Stop()
		}
		runLog.Close()
		fmt.Fprintln(os.Stderr, "taskx plan run:", err)
		return 1
	}
	// The first Ctrl-C cancels the run and lets it end cleanly; a second
	// one kills the process as usual.
	stopCancel := context.AfterFunc(ctx, func() {
		run.Cancel()
		stopSignals()
	})
	defer stopCancel()
	res := run.Wait()
	elapsed := time.Since(started)
	if view != nil {
		view.Stop()
	}
	if err := runLog.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "taskx plan run: warning: the run log:", err)
	}

	printSummary(summaryOut, res, steps, elapsed, view == nil)
	fmt.Fprintf(summaryOut, "events: %s\n", filepath.Join(dir, "runs", runID, "events.jsonl"))
	switch res.Status {
	case workflow.StatusSucceeded:
		return 0
	case workflow.StatusCancelled:
		return 130
	}
	return 1
}

// planFileArg parses a subcommand's flags, before or after the one FILE
// argument, and returns FILE. When it cannot (a usage error, already
// reported, or -h), ok is false and code is the exit code.
func planFileArg(fs *flag.FlagSet, args []string) (file string, code int, ok bool) {
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, planUsage)
		fmt.Fprintf(os.Stderr, "\nflags of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", 0, false
			}
			return "", 2, false
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintf(os.Stderr, "taskx %s: want one plan file, got %d arguments\n\n%s", fs.Name(), len(positional), planUsage)
		return "", 2, false
	}
	return positional[0], 0, true
}

// loadPlan reads and checks a plan. Faults go to errOut, one a line as
// FILE: PATH: MESSAGE, and give exit code 1.
func loadPlan(file string, errOut io.Writer) (*workflow.Plan, int) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintln(errOut, "taskx plan:", err)
		return nil, 1
	}
	p, err := workflow.DecodePlan(data)
	if err != nil {
		fmt.Fprintf(errOut, "%s: %v\n", file, err)
		return nil, 1
	}
	if faults := p.Check(); len(faults) > 0 {
		for _, f := range faults {
			fmt.Fprintf(errOut, "%s: %v\n", file, f)
		}
		fmt.Fprintf(errOut, "%s: %d %s; the plan schema is in docs/plans.md\n", file, len(faults), plural(len(faults), "fault", "faults"))
		return nil, 1
	}
	return p, 0
}

// defaultDataDir is $XDG_STATE_HOME/task-x, or ~/.local/state/task-x.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "task-x"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data dir: %w; pass --data-dir", err)
	}
	return filepath.Join(home, ".local", "state", "task-x"), nil
}

// newRunID names a run by its start time and a random suffix, so that ids
// sort by time and two runs started in the same second differ.
func newRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return "plan-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// isTerminal reports whether f is a terminal that takes cursor movement.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(f.Fd()) && os.Getenv("TERM") != "dumb"
}

// terminalWidth is f's width in columns, 80 when unknown.
func terminalWidth(f *os.File) int {
	if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
		return w
	}
	return 80
}

// jsonLines writes each event as one JSON object a line. The scheduler
// calls a sink from one goroutine at a time, so it needs no lock; after a
// failed write (a closed pipe) it stops writing.
type jsonLines struct {
	w   io.Writer
	err error
}

func (j *jsonLines) Emit(e workflow.Event) {
	if j.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		j.err = err
		return
	}
	_, j.err = j.w.Write(append(b, '\n'))
}

// printSummary tells how the run ended; with steps, one line per step
// (the terminal view has shown them already); then its notes.
func printSummary(w io.Writer, res *workflow.Result, steps []workflow.Step, elapsed time.Duration, withSteps bool) {
	counts := map[workflow.Status]int{}
	for _, r := range res.Steps {
		counts[r.Status]++
	}
	var parts []string
	for _, s := range []workflow.Status{workflow.StatusSucceeded, workflow.StatusFailed, workflow.StatusCancelled, workflow.StatusSkipped} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(w, "run %s %s in %s: %s\n", res.RunID, res.Status, humanDuration(elapsed), strings.Join(parts, ", "))
	if withSteps {
		width := 0
		for _, s := range steps {
			width = max(width, len(s.ID))
		}
		for _, s := range steps {
			r := res.Steps[s.ID]
			note := r.Reason
			if r.Err != nil {
				note = r.Err.Error()
			}
			fmt.Fprintf(w, "  %-*s  %-9s  %s\n", width, s.ID, r.Status, note)
		}
	}
	printNotes(w, res)
}

// printNotes adds what the step lines do not say: a broken engine, and a
// step kind that has no runner yet.
func printNotes(w io.Writer, res *workflow.Result) {
	if res.Err != nil {
		fmt.Fprintln(w, "the engine failed:", res.Err)
	}
	for _, r := range res.Steps {
		if errors.Is(r.Err, workflow.ErrKindNotAvailable) {
			fmt.Fprintln(w, "note: the subagent step kind is not available yet; it arrives with team mode, and until then a run only checks and schedules the plan")
			return
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

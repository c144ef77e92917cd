package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/task-x/runtime/workflow"
)

// termView is the live view of `taskx plan run` on a terminal: one line per
// step with its status, elapsed time and, when it ended badly, why; a
// spinner on running steps; redrawn in place with ANSI cursor movement.
//
// It is a workflow.Sink. Emit and the spinner's ticker both redraw, under
// mu; the ticker goroutine is owned by Start and Stop.
type termView struct {
	out   io.Writer
	runID string
	color bool
	now   func() time.Time
	width func() int // the terminal's columns; lines are cut to fit, so none wraps

	mu        sync.Mutex
	rows      []*viewRow // plan order, then steps added while running
	byID      map[workflow.StepID]*viewRow
	runStatus workflow.Status
	started   time.Time
	ended     time.Time
	frame     int
	drawn     int // lines on screen from the last draw

	stop chan struct{}
	done chan struct{}
}

// viewRow is what the view knows of one step.
type viewRow struct {
	id      workflow.StepID
	label   string // role or kind
	status  workflow.Status
	attempt int
	started time.Time
	ended   time.Time
	note    string // the error or skip reason
}

// spinnerFrames turn on running steps, one frame per tick.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinnerTick = 100 * time.Millisecond

// newTermView makes a view of the given steps, all pending.
func newTermView(out io.Writer, runID string, steps []workflow.Step) *termView {
	v := &termView{
		out:       out,
		runID:     runID,
		color:     os.Getenv("NO_COLOR") == "",
		now:       time.Now,
		width:     func() int { return 80 },
		byID:      map[workflow.StepID]*viewRow{},
		runStatus: workflow.StatusPending,
	}
	for _, s := range steps {
		v.addRow(s.ID, workflow.StepLabel(s))
	}
	return v
}

func (v *termView) addRow(id workflow.StepID, label string) *viewRow {
	r := &viewRow{id: id, label: label, status: workflow.StatusPending}
	v.rows = append(v.rows, r)
	v.byID[id] = r
	return r
}

// Start hides the cursor, draws the first frame, and starts the spinner.
func (v *termView) Start() {
	v.mu.Lock()
	v.started = v.now()
	io.WriteString(v.out, "\x1b[?25l")
	v.redraw()
	v.mu.Unlock()
	v.stop, v.done = make(chan struct{}), make(chan struct{})
	go v.spin()
}

// Stop ends the spinner, draws the last frame, and shows the cursor again.
func (v *termView) Stop() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.redraw()
	io.WriteString(v.out, "\x1b[?25h")
}

func (v *termView) spin() {
	defer close(v.done)
	t := time.NewTicker(spinnerTick)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.mu.Lock()
			v.frame++
			v.redraw()
			v.mu.Unlock()
		}
	}
}

// Emit records a transition and redraws.
func (v *termView) Emit(e workflow.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.StepID == "" {
		v.runStatus = e.To
		if e.To.Terminal() {
			v.ended = e.TS
		}
		v.redraw()
		return
	}
	r := v.byID[e.StepID]
	if r == nil { // added while running
		r = v.addRow(e.StepID, string(e.Kind))
	}
	r.status = e.To
	r.attempt = max(r.attempt, e.Attempt)
	if e.To == workflow.StatusRunning && r.started.IsZero() {
		r.started = e.TS
	}
	if e.To.Terminal() {
		r.ended = e.TS
		r.note = e.Error
		if r.note == "" {
			r.note = e.Reason
		}
	}
	v.redraw()
}

// redraw moves the cursor back to the view's first line and writes every
// line again, in one write. Call it with mu held.
func (v *termView) redraw() {
	var b bytes.Buffer
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn)
	}
	lines := v.render(v.now())
	width := v.width()
	for _, line := range lines {
		b.WriteString("\r\x1b[2K")
		b.WriteString(ansi.Truncate(line, width-1, "…"))
		b.WriteByte('\n')
	}
	b.WriteString("\x1b[J") // anything below, from a taller frame
	v.drawn = len(lines)
	v.out.Write(b.Bytes())
}

// render is the frame at now: a header line for the run, then one line per
// step. Call it with mu held.
func (v *termView) render(now time.Time) []string {
	lines := make([]string, 0, len(v.rows)+1)
	runElapsed := elapsedBetween(v.started, v.ended, now)
	lines = append(lines, fmt.Sprintf("%s %s  %s  %s",
		v.paint(bold, "taskx plan run"), v.runID, v.statusText(v.runStatus), runElapsed))
	idWidth, labelWidth := 0, 0
	for _, r := range v.rows {
		idWidth = max(idWidth, ansi.StringWidth(string(r.id)))
		labelWidth = max(labelWidth, ansi.StringWidth(r.label))
	}
	for _, r := range v.rows {
		elapsed := ""
		if !r.started.IsZero() {
			elapsed = elapsedBetween(r.started, r.ended, now)
		}
		line := fmt.Sprintf("%s %s  %s  %s  %6s",
			v.icon(r.status),
			pad(string(r.id), idWidth),
			v.paint(faint, pad(r.label, labelWidth)),
			v.statusText(r.status)+spaces(len("succeeded")-len(r.status)),
			elapsed)
		if r.attempt > 1 {
			line += fmt.Sprintf("  attempt %d", r.attempt)
		}
		if r.note != "" {
			line += "  " + v.paint(faint, r.note)
		}
		lines = append(lines, strings.TrimRight(line, " "))
	}
	return lines
}

// elapsedBetween is the time from start to end, or to now while running.
func elapsedBetween(start, end, now time.Time) string {
	if start.IsZero() {
		return ""
	}
	if end.IsZero() {
		end = now
	}
	return humanDuration(end.Sub(start))
}

// humanDuration is a duration as the view and the summary show it: 420ms,
// 3.2s, 1m5s.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// The SGR codes the view uses.
const (
	bold   = "1"
	faint  = "2"
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

func (v *termView) paint(sgr, s string) string {
	if !v.color || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

func (v *termView) icon(s workflow.Status) string {
	switch s {
	case workflow.StatusRunning:
		return v.paint(cyan, spinnerFrames[v.frame%len(spinnerFrames)])
	case workflow.StatusSucceeded:
		return v.paint(green, "✓")
	case workflow.StatusFailed:
		return v.paint(red, "✗")
	case workflow.StatusCancelled:
		return v.paint(yellow, "⊘")
	case workflow.StatusSkipped:
		return v.paint(yellow, "↷")
	}
	return v.paint(faint, "·")
}

func (v *termView) statusText(s workflow.Status) string {
	switch s {
	case workflow.StatusRunning:
		return v.paint(cyan, string(s))
	case workflow.StatusSucceeded:
		return v.paint(green, string(s))
	case workflow.StatusFailed:
		return v.paint(red, string(s))
	case workflow.StatusCancelled, workflow.StatusSkipped:
		return v.paint(yellow, string(s))
	}
	return v.paint(faint, string(s))
}

func pad(s string, width int) string { return s + spaces(width-ansi.StringWidth(s)) }

func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("%*s", n, "")
}

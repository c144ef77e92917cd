package e2e

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

const maxMessage = 32 << 20 // the protocol's 32 MiB

// paddedRequest returns a request line of exactly size bytes (without the
// newline) whose params carry a string pad the runtime must reject by name.
func paddedRequest(id string, size int) []byte {
	head := `{"jsonrpc":"2.0","id":"` + id + `","method":"provider/capabilities","params":{"pad":"`
	tail := `"}}`
	line := make([]byte, 0, size)
	line = append(line, head...)
	line = append(line, bytes.Repeat([]byte("x"), size-len(head)-len(tail))...)
	return append(line, tail...)
}

func TestALineOf31MiBIsAnswered(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Send(string(paddedRequest("big", 31<<20)))
	ExpectError(t, r.Response("big"), codeInvalidParams, "pad: unknown field")
	ExpectResult(t, r.Call("provider/capabilities", nil), nil)
}

func TestALineOfExactly32MiBIsAnswered(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	r.Send(string(paddedRequest("edge", maxMessage)))
	ExpectError(t, r.Response("edge"), codeInvalidParams, "pad: unknown field")
}

func TestALineOver32MiBEndsTheSessionWithoutWaitingForItsEnd(t *testing.T) {
	t.Parallel()
	r := Start(t)
	r.Initialize()
	// One byte over the limit and no newline: the runtime must not wait for
	// the rest of the line (it may never come) and must not buffer it all.
	line := paddedRequest("huge", maxMessage+1)
	go func() {
		_, _ = io.Copy(r.stdin, bytes.NewReader(line)) // stdin stays open
	}()
	code, rest := r.WaitExit()
	if code == 0 {
		t.Fatalf("exit code 0 after an oversized line; want non-zero")
	}
	if len(rest) != 0 {
		t.Fatalf("the oversized line was answered: %v", rest)
	}
	if errText := r.Stderr(); !strings.Contains(errText, "32 MiB") {
		t.Fatalf("stderr does not say why the session ended:\n%s", errText)
	}
}

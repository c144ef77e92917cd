package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExitDoesNotHangOnAClientThatStoppedReading: replies pile up in a full
// stdout pipe, then SIGTERM; the runtime must still exit, with code 0.
func TestExitDoesNotHangOnAClientThatStoppedReading(t *testing.T) {
	t.Parallel()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd := exec.Command(bins.runtime)
	cmd.Stdout = outW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	go func() {
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
		for i := 1; i < 20000; i++ {
			if _, err := fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"provider/capabilities"}`+"\n", i); err != nil {
				return
			}
		}
	}()

	// Wait until the runtime's stdout pipe is full: from then on every reply
	// it writes blocks. (TIOCINQ is FIONREAD: the bytes waiting in the pipe.)
	pipeSize, err := unix.FcntlInt(outR.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		n, err := unix.IoctlGetInt(int(outR.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n >= pipeSize*3/4 { // replies fill pages only partly; thousands more are queued
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stdout never filled: %d of %d bytes", n, pipeSize)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the runtime exited with %v, want code 0", err)
		}
	case <-time.After(waitLimit):
		cmd.Process.Kill()
		t.Fatalf("the runtime did not exit within %s while its client was not reading", waitLimit)
	}
	stdin.Close()
}

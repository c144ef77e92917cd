package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/task-x/runtime/rpc"
)

// doctor starts the runtime the way an editor does, performs the lifecycle
// (initialize, shutdown, exit) and prints what went over the wire.
func doctor(args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	runtimePath := fs.String("runtime", "", "path of task-x-runtime (default: next to taskx, then $PATH)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bin, err := findRuntime(*runtimePath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskx doctor:", err)
		return 1
	}
	if err := checkRuntime(bin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskx doctor:", err)
		return 1
	}
	return 0
}

// findRuntime looks for task-x-runtime: the flag, then beside this
// executable, then on PATH.
func findRuntime(flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if self, err := os.Executable(); err == nil {
		sibling := filepath.Join(filepath.Dir(self), rpc.ServerName)
		if fi, err := os.Stat(sibling); err == nil && !fi.IsDir() {
			return sibling, nil
		}
	}
	if p, err := exec.LookPath(rpc.ServerName); err == nil {
		return p, nil
	}
	return "", errors.New("task-x-runtime not found beside taskx or on PATH; build it with `go build -o bin/ ./cmd/...` or pass --runtime")
}

func checkRuntime(bin string, out io.Writer) error {
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	defer cmd.Process.Kill()
	replies := rpc.NewLineReader(stdout, rpc.MaxMessageBytes)

	roundTrip := func(id int, method string, params any) (json.RawMessage, error) {
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		fmt.Fprintf(out, "--> %s\n", req)
		if _, err := stdin.Write(append(req, '\n')); err != nil {
			return nil, err
		}
		for {
			line, err := replies.ReadLine()
			if err != nil {
				return nil, fmt.Errorf("reading the reply to %s: %w", method, err)
			}
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				return nil, fmt.Errorf("the runtime wrote a line that is not JSON: %w", err)
			}
			if string(msg.ID) != fmt.Sprint(id) {
				continue // a notification
			}
			fmt.Fprintf(out, "<-- %s\n", indent(line))
			if msg.Error != nil {
				return nil, fmt.Errorf("%s failed: %d %s", method, msg.Error.Code, msg.Error.Message)
			}
			return msg.Result, nil
		}
	}

	start := time.Now()
	result, err := roundTrip(1, "initialize", map[string]any{
		"protocolVersion": rpc.ProtocolVersion,
		"clientInfo":      map[string]string{"name": "taskx doctor", "version": rpc.Version},
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	var init struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		Providers  []struct {
			Kind string `json:"kind"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(result, &init); err != nil {
		return err
	}
	if _, err := roundTrip(2, "shutdown", nil); err != nil {
		return err
	}
	exit, _ := json.Marshal(map[string]string{"jsonrpc": "2.0", "method": "exit"})
	fmt.Fprintf(out, "--> %s\n", exit)
	if _, err := stdin.Write(append(exit, '\n')); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the runtime did not exit cleanly: %w", err)
	}
	fmt.Fprintf(out, "\nok: %s %s answered initialize in %s and exited with code 0; %d provider kinds\n",
		init.ServerInfo.Name, init.ServerInfo.Version, elapsed.Round(time.Millisecond), len(init.Providers))
	return nil
}

func indent(line []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, line, "    ", "  ") != nil {
		return string(line)
	}
	return b.String()
}

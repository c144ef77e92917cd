// Command task-x-runtime is the process an editor starts: JSON-RPC 2.0 over
// stdio, one JSON object a line (see docs/ and the protocol spec).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/task-x/runtime/rpc"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--version", "version":
			fmt.Println(rpc.ServerName, rpc.Version)
			return
		default:
			fmt.Fprintf(os.Stderr, "task-x-runtime: unknown argument %q; run it with no arguments and speak JSON-RPC on stdin/stdout\n", os.Args[1])
			os.Exit(2)
		}
	}
	os.Exit(run())
}

func run() int {
	redactor := rpc.NewRedactor(os.Stderr)
	level, levelErr := rpc.ParseLogLevel(os.Getenv(rpc.LogEnv))
	logger := rpc.NewLogger(redactor, level)
	if levelErr != nil {
		logger.Warn(levelErr.Error() + "; using warn")
	}

	// stdout belongs to the protocol: anything else that prints goes to stderr.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	stdin := rpc.InterruptibleStdin(logger)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	server := rpc.NewServer(rpc.Options{
		Logger:      logger,
		Redactor:    redactor,
		Diagnostics: os.Getenv(rpc.DiagnosticsEnv) == "1",
	})
	return server.Serve(stdin, stdout, stop)
}

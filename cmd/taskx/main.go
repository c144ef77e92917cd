// Command taskx is the headless CLI of task-x: it drives the runtime without
// an editor.
//
//	taskx doctor [--runtime PATH]   start the runtime, show an initialize round trip, shut it down
//	taskx version                   print the version
//	taskx plan validate|graph|run   check, draw and run a team plan (docs/plans.md)
package main

import (
	"fmt"
	"os"

	"github.com/task-x/runtime/rpc"
)

const usage = `usage: taskx <command> [arguments]

commands:
  doctor [--runtime PATH]   start task-x-runtime, show an initialize round trip, shut it down
  version                   print the version
  plan validate|graph|run   check, draw and run a scripted team plan (taskx plan help)
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "doctor":
		return doctor(args[1:])
	case "version", "--version":
		fmt.Println("taskx", rpc.Version)
		return 0
	case "plan":
		return plan(args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "taskx: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// Package e2e drives the real binaries over their stdio pipes, as the editor
// extension does: the harness builds task-x-runtime and taskx once, starts a
// process per test, and checks every line the runtime writes to stdout.
package e2e

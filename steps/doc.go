// Package steps holds the step kinds of the workflow engine, one package
// each: llm (model turns), tools (tool calls under policy and sandbox),
// agent (compiling agent runs to DAGs), and the kinds still to come.
//
// Packages under steps import workflow, worktree and index, never rpc.
package steps

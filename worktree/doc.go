// Package worktree owns git for the runtime: worktrees for subagents,
// patches between them and the working tree, and the edit log (every change
// an agent makes, kept, reverted or undone, with checkpoints on disk).
//
// It imports nothing else of the project.
package worktree

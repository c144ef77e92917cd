// Package workflow is the engine every agent run compiles to: a DAG of typed
// steps, one scheduler that drives it with bounded parallelism, the
// transitions it reports, the run log on disk, and the team plan schema.
//
// It knows nothing of models, tools or git, and imports nothing else of the
// project; step kinds are registered by the packages that own them
// (Registry). Its invariants: one coordinator goroutine owns a run's DAG
// (runners only send it messages), a run's events carry a seq that starts
// at 0 and has no gaps, and a step's panic is that step's failure.
package workflow

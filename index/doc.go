// Package index owns what the runtime knows of a workspace: the scan, the
// tree-sitter symbols, project detection, instruction files, the project
// graph and retrieval.
//
// It imports nothing else of the project.
package index

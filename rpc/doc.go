// Package rpc is the runtime's JSON-RPC 2.0 boundary on stdio: the newline
// framing with its 32 MiB cap, the envelope rules (one object a line, ids
// that are strings or integers, no batches), the lifecycle (initialize,
// shutdown, exit), strict params, cancellation, and the one table that maps
// failures to the protocol's error codes. Method groups bind their handlers
// here; the work itself lives in the packages below.
//
// It is imported only by cmd. Its invariants: nothing but protocol messages
// is written to stdout, and every request gets exactly one reply (a panic in
// a handler becomes a -32603 reply, never a crash).
package rpc

// Package faults holds ringcast's fault scenarios (tests only): the real
// `ringcast serve` binary in a subprocess behind a fault proxy
// (server/ringtest/faultproxy), publishers and Go-client consumers on
// Connect, gRPC and gRPC-Web, and a history checker
// (server/ringtest/history) that proves no fact lost or repeated between
// resync boundaries and every resync explained. The short scenarios run in
// the normal test run; TestSoak runs them on a randomized schedule for as
// long as asked (`go tool task soak -- --duration 10m`). docs/reliability.md
// describes them and how to replay a failing seed.
package faults

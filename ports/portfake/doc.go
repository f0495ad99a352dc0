// Package portfake is test support: in-memory fakes of the executor's ports
// for unit tests, one of each, so every package tests against the same
// behaviour instead of a private copy that drifts from the port's doc.
//
//   - Provider is a stateful ports.Provider: one Sandbox per session,
//     running or stopped, its files in memory, the specs it was asked for,
//     gate tokens minted and revoked through its GateTokenIssuer like the
//     real providers', and per-operation faults and hooks (fail the next N
//     calls, block a call until released).
//   - Service is a recording ports.Service: the calls and the last request
//     of each kind, files in memory keyed by session and path, an error to
//     answer, and streaming hooks for the HTTP edge's tests.
//
// Like porttest it lives under ports and imports only the standard library,
// core and ports (arch_test.go); unlike porttest it has no testify, because
// it asserts nothing: the tests that use it do. Only tests import it.
package portfake

// Package executor is the pure half of the executor's application service:
// the body of `PUT /v1/sessions/{id}` (SessionRequest), its validation, and
// the sandbox.Spec and session.Session a session gets from it (BuildSpec).
// It performs no I/O; app.Service drives the provider and the store with
// what it returns.
package executor

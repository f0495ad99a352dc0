// Package testworld is the world the integration tests run in, on a real
// Docker engine (and, for the Kubernetes suites, the test cluster's pod
// bridge): the Docker and Kubernetes conformance and bypass suites,
// cmd/executor, deploy/helm and e2e all use it. It is an ordinary package so that test files can import it, but nothing outside
// tests should: it builds binaries and images, starts containers and
// serves a control plane, all removed when the test ends.
//
// An Env holds, per test: a user-defined Docker network (so Docker's
// embedded resolver 127.0.0.11 exists, B-4), a control plane (a SQLite
// session store behind the gate-config handler on the network's gateway), an
// OTLP trace collector beside it that every gate exports to, an
// origin container running the probe in server mode (HTTP, HTTPS, TCP, UDP
// and DNS, logging every request), a gate image that trusts the origin's
// test CA, and a gated Docker provider whose sandboxes get the probe
// uploaded to /tmp/probe.
package testworld

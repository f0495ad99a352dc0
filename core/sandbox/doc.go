// Package sandbox is the pure half of the sandbox API (docs/sandbox-api.txt):
// the spec and result types, the sentinels, validation of everything a caller
// can hand in, the adoption decision, write planning, the argv of the scripts
// both backends run inside a sandbox (package shell holds the scripts), the
// exec deadline verdict and output capping. It performs no I/O and imports
// only the standard library and core; the Provider and Sandbox ports that use
// it live in package ports.
package sandbox

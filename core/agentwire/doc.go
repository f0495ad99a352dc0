// Package agentwire is the contract between a provider and the in-sandbox
// agent (cmd/agent), each part defined once: where the agent lives in a
// sandbox and how it is started, the HTTP routes it serves, their request
// and response documents, and how a classified path error travels.
//
// Transport. A provider starts the agent with one engine exec per sandbox
// (Argv) and speaks to it over that exec's stdin and stdout, multiplexed by
// yamux (the agent is the yamux server). Every operation is one HTTP/1.1
// exchange on its own yamux stream, so a slow transfer never blocks an exec
// and a dropped stream fails only the calls in flight. Nothing listens on
// the sandbox's network.
//
// Exec answers a stream of newline-delimited JSON ExecEvents: the command's
// process group first, output chunks as they arrive, the ExecExit last. A
// stream that ends without an ExecExit is no result: the provider reports an
// error (or TimedOut, from its own clock), never a guess.
//
// File routes take the path as the query parameter "path" and answer a
// classified failure as an Error document with a 4xx status; its Code maps
// back to core/sandbox's sentinels (Err, CodeOf).
package agentwire

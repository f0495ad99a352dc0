// Package agentclient is the provider's side of the in-sandbox agent
// (core/agentwire): one Conn per sandbox holds a yamux session over the
// agent's engine exec stream, opens it on first use and re-opens it on the
// next call after it dropped, and turns agentwire's documents back into
// core/sandbox results and sentinels. The backends differ only in how they
// start the agent's exec (an Opener), and in how they judge a lost stream
// (whether the sandbox itself is gone).
package agentclient

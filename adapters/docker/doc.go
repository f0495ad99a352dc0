// Package docker implements ports.Provider and ports.Sandbox on a Docker
// Engine through github.com/docker/docker/client.
//
// Every session's sandbox is one container named ContainerName(sid),
// labelled with the session id, running sandbox.KeepAliveArgv under an init
// process. Commands, reads and writes are execs running the core's scripts;
// bulk writes are an archive PUT between two execs; export is the archive
// GET endpoint, which also works on a stopped container. SDK errors are
// translated once, here, into the core's sentinels.
package docker

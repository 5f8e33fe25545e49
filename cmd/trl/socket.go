package main

import "flag"

// socketPath is the daemon's socket for serve, call and mcp: --socket;
// else --instance when given (/tmp/trl-NAME.sock); else $TRL_SOCKET, the
// variable the Python client reads too, so that one setting points every
// client and `make run` at one daemon; else the default instance's.
func socketPath(fs *flag.FlagSet, socket, instance string) string {
	if socket != "" {
		return socket
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "instance" })
	if env := secretEnv("TRL_SOCKET"); env != "" && !given {
		return env
	}
	return "/tmp/trl-" + instance + ".sock"
}

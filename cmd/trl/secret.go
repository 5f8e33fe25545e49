package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// secretsFDVar names the fd through which a daemon hands its TRL_*
// variables to itself across the re-exec in hideSecrets.
const secretsFDVar = "TRL_SECRETS_FD"

// secrets holds the TRL_* variables once hideSecrets moved them out of the
// environment.
var secrets map[string]string

// hideSecrets keeps TRL_AUTH_TOKEN and every other TRL_* variable out of
// the daemon's /proc/PID/environ, which any command running as the
// daemon's user could read (`cat /proc/$PPID/environ`): the daemon writes
// them to a memfd and re-executes itself with an environment without
// them, and the new image reads them back. Shells never get TRL_* either
// (see daemonEnv). If the re-exec cannot be done, the daemon goes on as
// it is and says so.
func hideSecrets() {
	if fd := os.Getenv(secretsFDVar); fd != "" {
		loadSecrets(fd)
		return
	}
	found := map[string]string{}
	var env []string
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TRL_") {
			found[k] = v
			continue
		}
		env = append(env, kv)
	}
	if len(found) == 0 {
		return
	}
	exe, err := os.Executable()
	if err == nil {
		var fd int
		fd, err = unix.MemfdCreate("trl-secrets", 0) // no CLOEXEC: it must survive exec
		if err == nil {
			payload, _ := json.Marshal(found)
			f := os.NewFile(uintptr(fd), "trl-secrets")
			if _, err = f.Write(payload); err == nil {
				env = append(env, secretsFDVar+"="+strconv.Itoa(fd))
				err = syscall.Exec(exe, os.Args, env)
			}
			f.Close()
		}
	}
	fmt.Fprintf(os.Stderr, "trl: warning: could not re-execute without TRL_* in the environment (%v); commands running as this user can read them from /proc\n", err)
}

func loadSecrets(fdStr string) {
	os.Unsetenv(secretsFDVar)
	fd, err := strconv.Atoi(fdStr)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "trl-secrets")
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return
	}
	json.Unmarshal(b, &secrets)
}

// secretEnv reads a TRL_* variable, wherever hideSecrets put it.
func secretEnv(name string) string {
	if v, ok := secrets[name]; ok {
		return v
	}
	return os.Getenv(name)
}

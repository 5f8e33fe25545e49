package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/trl-project/trl/session"
)

// isolateFlags are serve's tenant isolation flags (SPEC §13).
type isolateFlags struct {
	on       bool
	uidRange string
	nproc    uint64
	homes    string
}

func (f *isolateFlags) register(fs *flag.FlagSet) {
	def := fmt.Sprintf("%d-%d", session.DefaultUIDRange[0], session.DefaultUIDRange[1])
	each := "each session"
	if fs.Name() == "trl serve" {
		each = "each session (each gateway tenant and workspace)"
	}
	fs.BoolVar(&f.on, "isolate", false, "run "+each+" under its own uid and gid, with a private home and a process limit; needs root, or CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL, CAP_DAC_OVERRIDE, CAP_SYS_PTRACE and CAP_SYS_ADMIN (its own /tmp, /var/tmp, /dev/shm and IPC per session)")
	fs.StringVar(&f.uidRange, "uid-range", def, "with --isolate: the uids (and gids) handed to sessions, FIRST-LAST; no account may use them")
	fs.Uint64Var(&f.nproc, "isolate-nproc", 256, "with --isolate: RLIMIT_NPROC, the most processes one session's uid may run")
	fs.StringVar(&f.homes, "isolate-homes", "", "with --isolate: where the sessions' homes are made (default $TMPDIR/trl-homes); every directory above it must be enterable by others")
}

// isolation returns the session options the flags ask for (nil without
// --isolate), or why the daemon cannot isolate.
func (f *isolateFlags) isolation() (*session.Isolation, error) {
	if !f.on {
		return nil, nil
	}
	if err := session.CheckIsolationPrivilege(); err != nil {
		return nil, err
	}
	a, b, ok := strings.Cut(f.uidRange, "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil || first == 0 || last < first {
		return nil, fmt.Errorf("--uid-range %q: want FIRST-LAST, two uids above 0 with FIRST <= LAST", f.uidRange)
	}
	if f.nproc == 0 {
		return nil, fmt.Errorf("--isolate-nproc must be at least 1")
	}
	return &session.Isolation{FirstUID: uint32(first), LastUID: uint32(last), NProc: f.nproc, HomeRoot: f.homes}, nil
}

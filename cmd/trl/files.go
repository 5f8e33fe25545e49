package main

import (
	"flag"
	"strings"

	"github.com/trl-project/trl/files"
)

// fsRoots is the repeatable --fs-root flag: the trees fs.* may reach.
type fsRoots []string

func (r *fsRoots) String() string { return strings.Join(*r, ",") }

func (r *fsRoots) Set(v string) error {
	*r = append(*r, v)
	return nil
}

func (r *fsRoots) register(fs *flag.FlagSet) {
	what := "fs.*"
	switch fs.Name() {
	case "trl serve":
		what = "fs.* and /files"
	case "trl mcp":
		what = "the file tools (fs.*)"
	}
	fs.Var(r, "fs-root", "confine "+what+" to this directory tree, enforced by the kernel (openat2 RESOLVE_BENEATH); repeatable; default: the whole filesystem, with each session's permissions")
}

// open opens the trees (nil without --fs-root: the runtime uses the whole
// filesystem).
func (r fsRoots) open() (*files.FS, error) {
	if len(r) == 0 {
		return nil, nil
	}
	return files.New(files.Options{Roots: r})
}

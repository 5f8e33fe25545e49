package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A session's state (SPEC §17) is read from the idle shell, and applied
// to a new one, by lines trl sends for itself, like settle's: they run
// between two commands, under a sequence number of their own, with a sink
// that passes whatever reaches the terminal meanwhile (a background job's
// output) to the idle log. trl's lines themselves write nothing to the
// terminal: the shell code is a file in the session's private directory,
// sourced with stdin, stdout and stderr pointed away from the terminal, and
// the state is written to another file there as NUL-separated fields
// (a shell variable cannot hold a NUL, so no value can end a field early).
// What the shell prints raw in its own quoting (dash's `set`, `export -p`)
// is parsed as shell words (see words.go). The line turns alias expansion
// off while the file is parsed (an alias named `if` or `for` would
// otherwise rewrite trl's code) and every command in it is `\builtin X`
// (bash, zsh) or `\command X` (dash): quoted words are never aliases, and
// builtin/command bypass functions, so a function named `cd` or `printf`
// is not called. The history entry bash makes for the line is removed.

// ShellState is what session.state returns and session.create {state}
// applies.
type ShellState struct {
	// Shell is the dialect: "sh" (dash), "bash" or "zsh".
	Shell string `json:"shell"`
	Cwd   string `json:"cwd"`
	// Env is the exported scalar variables.
	Env map[string]string `json:"env"`
	// Vars is every other variable, sorted by name.
	Vars []Var `json:"vars"`
	// Readonly names the readonly variables of Env and Vars.
	Readonly []string `json:"readonly"`
	// Functions maps a function's name to its definition as the shell
	// prints it (bash: `declare -f`; zsh: the body of $functions).
	Functions map[string]string `json:"functions"`
	Aliases   map[string]string `json:"aliases"`
	// Options are `set -o` options, and bash's shopt or zsh's setopt
	// options, by name.
	Options map[string]bool `json:"options"`
	Umask   string          `json:"umask"`
	// Dirs is the directory stack below the current directory (bash
	// DIRSTACK[1:], zsh $dirstack).
	Dirs []string `json:"dirs"`
	// NotCarried lists what the shell has that a state cannot carry.
	NotCarried []NotCarried `json:"not_carried"`

	// bashOpts is what SHELLOPTS and BASHOPTS were when bash's state was
	// read (with trl's line's expand_aliases off), not part of the state:
	// applying the state in this daemon skips setting the options when
	// the new shell's are already the same (see bashState.writer).
	bashOpts *[2]string
}

// Var is a shell variable that is not an exported scalar.
type Var struct {
	Name string `json:"name"`
	// Kind is "scalar", "array", "assoc", "nameref" (bash; Value is the
	// name it refers to), "integer" or "float" (zsh).
	Kind  string `json:"kind"`
	Value string `json:"value,omitempty"`
	// Array holds an indexed array's values; Indices their indices when
	// the array is sparse (bash), absent when they are 0, 1, 2...
	Array   []string          `json:"array,omitempty"`
	Indices []int             `json:"indices,omitempty"`
	Assoc   map[string]string `json:"assoc,omitempty"`
	// Attrs are further attributes: bash's declare letters (i, l, u, t,
	// x for an exported array), zsh's typeset words (lower, upper, unique,
	// tag, hide, hideval, export).
	Attrs string `json:"attrs,omitempty"`
}

// NotCarried is something a state does not carry.
type NotCarried struct {
	// What is "trap", "job", "fd", "ulimit", "function", "variable"...
	What   string `json:"what"`
	Detail string `json:"detail"`
}

// stateLimit bounds the state file a shell writes: the daemon reads it
// whole.
const stateLimit = 64 << 20

// stateTimeout bounds how long trl's own line may take.
const stateTimeout = 30 * time.Second

// stateFiles are the files of trl's state lines, in the session's
// private directory, each made by the daemon the first time a line needs
// it (see claimState and prepare) and reused, so that a file keeps the
// mode the daemon gave it whatever the user's umask (a shell with umask
// 0777 could not read back a file it made, nor the daemon one of another
// uid's).
//
// The shell writes the state over the old one in place (<>), without
// truncating it: on ext4, truncating a file that held data and writing it
// again makes the close wait for the new data's blocks (the auto_da_alloc
// safeguard for programs that rewrite files that way), which cost more
// than all the rest of a state read. Whatever of an older, longer state
// is left after the new one is never read: the reader's last field is
// the end mark followed by the sequence number of trl's line that wrote
// it, and the parser stops there, refusing a file whose end mark is
// another line's (a reader that stopped half way over an older state).
type stateFiles struct{ base string }

// The files, by the bit stateMade keeps for each.
const (
	stateOut   = "out"       // the state the reader writes
	stateAux   = "aux"       // bash: the list of functions (one by one)
	stateTraps = "aux.traps" // bash: the traps, listed by the line
	stateErr   = "err"       // what applying a state said on stderr
	stateSh    = "sh"        // the file the line sources
)

var stateFileBits = map[string]uint8{stateOut: 1, stateAux: 2, stateTraps: 4, stateErr: 8, stateSh: 16}

// stateFileModes are the modes of the files under isolation, where their
// group is the session's uid: the shell writes the first four and reads
// the last.
var stateFileModes = map[string]os.FileMode{stateOut: 0o660, stateAux: 0o660, stateTraps: 0o660, stateErr: 0o660, stateSh: 0o640}

func (s *Session) stateFiles() stateFiles { return stateFiles{base: filepath.Join(s.tmpDir, "state.")} }

func (f stateFiles) path(which string) string { return f.base + which }

// claimState makes the caller the one state line of the session until
// release is called: a second call meanwhile is ErrBusy at once (it would
// share the first's files). The files named are made if they are not yet.
func (s *Session) claimState(files ...string) (sf stateFiles, release func(), err error) {
	if !s.stateClaim.CompareAndSwap(false, true) {
		return sf, nil, errorf(ErrBusy, "session %s is busy: its state is being read or applied; retry", s.id)
	}
	release = func() { s.stateClaim.Store(false) }
	sf = s.stateFiles()
	for _, name := range files {
		if err := s.stateFile(sf, name, nil); err != nil {
			release()
			return sf, nil, err
		}
	}
	return sf, release, nil
}

// stateFile makes one of the files, holding data, unless it exists. The
// caller holds the claim.
func (s *Session) stateFile(sf stateFiles, name string, data []byte) error {
	bit := stateFileBits[name]
	if s.stateMade&bit != 0 {
		return nil
	}
	p := sf.path(name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("make %s: %w", p, err)
	}
	if s.lease != nil {
		if err := s.lease.share(p, stateFileModes[name]); err != nil {
			return err
		}
	}
	s.stateMade |= bit
	return nil
}

// prepare puts script in the file the shell sources. The file is written
// only when it holds something else: the bash reader's call is the same
// every time after the first, and rewriting a file costs its truncation
// (see stateFiles). Under isolation the session's uid can read the file
// but neither write nor replace it (the directory is the daemon's).
func (s *Session) prepare(sf stateFiles, script string) error {
	if s.stateMade&stateFileBits[stateSh] == 0 {
		s.stateScript = ""
		if err := s.stateFile(sf, stateSh, []byte(script)); err != nil {
			return err
		}
		s.stateScript = script
		return nil
	}
	if s.stateScript == script {
		return nil
	}
	s.stateScript = ""
	// Written over in place, and cut to its length only if it was
	// longer: not truncated to nothing first (see stateFiles).
	f, err := os.OpenFile(sf.path(stateSh), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	var fi os.FileInfo
	if _, err = f.WriteAt([]byte(script), 0); err == nil {
		fi, err = f.Stat()
	}
	if err == nil && fi.Size() > int64(len(script)) {
		err = f.Truncate(int64(len(script)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.stateScript = script
	return nil
}

// read reads one of the files the shell wrote, bounded.
func (f stateFiles) read(which string) ([]byte, error) {
	r, err := os.Open(f.path(which))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, stateLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > stateLimit {
		return nil, fmt.Errorf("the shell's state is larger than %d bytes", stateLimit)
	}
	return b, nil
}

// runOwn sends line as trl's own line and waits for its prompt record.
// It fails with ErrBusy when a command runs; the session is busy while the
// line runs. It returns the line's sequence number as the shell has it
// (the readers end their state with it).
func (s *Session) runOwn(ctx context.Context, line string) (string, error) {
	j, seq, err := s.sendOwn(line, false)
	if err != nil {
		return "", err
	}
	return seq, s.waitOwn(ctx, j)
}

// sendOwn is runOwn's first half: the line is sent, the session busy.
// With aside, it is written by a goroutine of its own, after the set-up
// line (cmdMu): sent while the shell starts, it must not wait for a
// program that reads nothing, or awaitStart's timeout, which closes the
// session and so fails both writes, would never run.
func (s *Session) sendOwn(line string, aside bool) (*Line, string, error) {
	s.mu.Lock()
	s.awaitSends()
	if err := s.unready(); err != nil {
		s.mu.Unlock()
		return nil, "", err
	}
	if s.resync {
		s.resync = false
		if err := s.settle(); err != nil {
			s.mu.Unlock()
			return nil, "", err
		}
	}
	s.seq++
	j := &Line{s: s, seq: s.seq, sink: idleSink{s}, done: make(chan struct{}), started: true, startedAt: time.Now()}
	s.ioMu.Lock()
	s.job = j
	s.ioMu.Unlock()
	s.state = StateBusy
	seq := strconv.FormatInt(j.seq, 10)
	full := s.dialect.seqVar(s.nonce, seq) + "; " + line + "\n"
	s.mu.Unlock()
	s.log.Trace().Str("line", full).Msg("send own line")
	write := func() {
		if err := s.writeLine([]byte(full)); err != nil {
			s.log.Debug().Err(err).Msg("write own line")
			s.channelBroken(err)
		}
	}
	if aside {
		go write()
	} else {
		write()
	}
	return j, seq, nil
}

// waitOwn is runOwn's second half: it waits for the line's prompt record.
func (s *Session) waitOwn(ctx context.Context, j *Line) error {
	t := time.NewTimer(stateTimeout)
	defer t.Stop()
	select {
	case <-j.done:
	case <-ctx.Done():
		// The line still runs; it completes by itself and the session
		// is idle again then.
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("the shell did not finish trl's state line within %s", stateTimeout)
	}
	if j.status.Exited {
		return s.exitedErr()
	}
	return nil
}

// idleSink passes what reaches the terminal while trl's own line runs
// (trl's line writes nothing there: a background job's output) to the
// idle log, as if no line ran. It is called with ioMu held, like deliver.
type idleSink struct{ s *Session }

func (k idleSink) Output(_ Stream, p []byte) { k.s.idle.write(p) }

// stateShell is one dialect's part of reading and applying states.
type stateShell interface {
	// reader is the file the shell sources to write its state; defined
	// says the shell has trl's reader function from an earlier call
	// (bash keeps it, see bashReader).
	reader(nonce, out, aux string, defined bool) string
	// line is the line that sources file with aliases off.
	line(nonce, file, errFile string, keepAliases bool) string
	// parse turns the shell's output into a state; end is the sequence
	// number of the line that wrote it, which follows its end mark.
	parse(out []byte, nonce, end string) (*ShellState, error)
	// writer is the file that applies st to a new shell; base is the
	// environment the shell started with.
	writer(st *ShellState, base map[string]string, nonce string) string
	// reservedOption reports whether an option is trl's to set.
	reservedOption(name string) bool
}

func (d dialect) state() stateShell {
	switch d.name {
	case "bash":
		return bashState{}
	case "zsh":
		return zshState{}
	}
	return shState{}
}

// State reads the session's state from its idle shell (SPEC §17). A
// session running a command answers ErrBusy.
func (s *Session) State(ctx context.Context) (*ShellState, error) {
	ss := s.dialect.state()
	if bs, ok := ss.(bashState); ok {
		bs.opts = &s.bashOpts // guarded by the claim, taken next
		ss = bs
	}
	files := []string{stateOut}
	if s.dialect.name == "bash" {
		files = append(files, stateTraps)
	}
	sf, release, err := s.claimState(files...)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.prepare(sf, ss.reader(s.nonce, sf.path(stateOut), sf.path(stateAux), s.readerDefined)); err != nil {
		return nil, err
	}
	seq, err := s.runOwn(ctx, ss.line(s.nonce, sf.path(stateSh), "/dev/null", true))
	if err != nil {
		return nil, err
	}
	s.readerDefined = true
	out, err := sf.read(stateOut)
	if err != nil {
		return nil, err
	}
	st, err := ss.parse(out, s.nonce, seq)
	if err != nil {
		return nil, fmt.Errorf("read the shell's state: %w", err)
	}
	if bs, ok := ss.(bashState); ok && st.Functions == nil {
		if err := s.bashFunctionsOneByOne(ctx, bs, st); err != nil {
			return nil, err
		}
	}
	st.Shell = s.dialect.name
	st.NotCarried = append(st.NotCarried, s.processNotCarried()...)
	st.normalize()
	return st, nil
}

// bashFunctionsOneByOne reads bash's functions with a second line, one
// `declare -f` each, when the one listing of them all could not be split
// for sure.
func (s *Session) bashFunctionsOneByOne(ctx context.Context, bs bashState, st *ShellState) error {
	sf := s.stateFiles() // State holds the claim
	if err := s.stateFile(sf, stateAux, nil); err != nil {
		return err
	}
	if err := s.prepare(sf, bs.functionsReader(s.nonce, sf.path(stateOut), sf.path(stateAux))); err != nil {
		return err
	}
	seq, err := s.runOwn(ctx, bs.line(s.nonce, sf.path(stateSh), "/dev/null", true))
	if err != nil {
		return err
	}
	out, err := sf.read(stateOut)
	if err != nil {
		return err
	}
	fs, err := bs.parse(out, s.nonce, seq)
	if err != nil {
		return fmt.Errorf("read the shell's functions: %w", err)
	}
	st.Functions = fs.Functions
	st.NotCarried = append(st.NotCarried, fs.NotCarried...)
	return nil
}

// ApplyState applies st to the session, which must be new (no command
// run yet): trl's own line, nothing visible. An error means the state
// could not be applied (the caller closes the session).
func (s *Session) ApplyState(ctx context.Context, st *ShellState) error {
	script, err := s.prepareApply(st)
	if err != nil {
		return err
	}
	return s.runApply(ctx, script)
}

// startWithState waits for a shell launchSession started and applies
// cfg's state, if it has one. The state (a fork's is read from its source
// meanwhile) and the files that apply it are made while the shell starts
// (making a file on ext4 here costs 0.1-0.6 ms), and the line that
// applies it is sent then too: the shell reads it once its start-up is
// done, without waiting for the daemon to see its first prompt. On
// failure the session is closed.
func (s *Session) startWithState(cfg Config, opts Options) error {
	if cfg.State == nil && cfg.StateFrom == nil {
		return s.awaitStart(opts)
	}
	// The files first: a fork's state may still be being read.
	_, release, err := s.claimState(stateErr, stateSh)
	if err == nil {
		release()
		st := cfg.State
		if cfg.StateFrom != nil {
			st, err = cfg.StateFrom()
		}
		var script string
		if err == nil {
			s.NoteAliases(st.Aliases)
			script, err = s.prepareApply(st)
		}
		if err == nil {
			err = s.applyAfterStart(opts, script)
		}
	}
	if err != nil {
		s.Close()
	}
	return err
}

// applyAfterStart sends the line that sources script (written by
// prepareApply) and waits for the start and for the line.
func (s *Session) applyAfterStart(opts Options, script string) error {
	sf, line, release, err := s.claimApply(script)
	if err != nil {
		return err
	}
	defer release()
	j, _, err := s.sendOwn(line, true)
	if err != nil {
		return err
	}
	if err := s.awaitStart(opts); err != nil {
		return err
	}
	if err := s.waitOwn(context.Background(), j); err != nil {
		return err
	}
	return s.applyErrors(sf)
}

// prepareApply checks st and writes the file that applies it; it needs
// the shell launched, not yet started.
func (s *Session) prepareApply(st *ShellState) (string, error) {
	if err := CheckState(st); err != nil {
		return "", err
	}
	if st.Shell != s.dialect.name {
		return "", errorf(ErrInvalid, "state is of a %s session and cannot be applied to %s (a %s shell)", st.Shell, s.cfg.Shell, s.dialect.name)
	}
	ss := s.dialect.state()
	base := map[string]string{}
	for _, kv := range s.startEnv {
		k, v, _ := cutEnv(kv)
		base[k] = v
	}
	apply := *st
	if s.lease != nil {
		apply.rehome(s.lease.home)
	}
	script := ss.writer(&apply, base, s.nonce)
	_, _, release, err := s.claimApply(script)
	if err != nil {
		return "", err
	}
	release()
	return script, nil
}

// runApply runs the file prepareApply wrote (writing it again if
// something else was written meanwhile).
func (s *Session) runApply(ctx context.Context, script string) error {
	sf, line, release, err := s.claimApply(script)
	if err != nil {
		return err
	}
	defer release()
	if _, err := s.runOwn(ctx, line); err != nil {
		return err
	}
	return s.applyErrors(sf)
}

// claimApply claims the state files (claimState), puts script in the one
// the shell sources, and returns the line that applies it; release ends
// the claim.
func (s *Session) claimApply(script string) (sf stateFiles, line string, release func(), err error) {
	sf, release, err = s.claimState(stateErr)
	if err != nil {
		return sf, "", nil, err
	}
	if err := s.prepare(sf, script); err != nil {
		release()
		return sf, "", nil, err
	}
	return sf, s.dialect.state().line(s.nonce, sf.path(stateSh), sf.path(stateErr), false), release, nil
}

// applyErrors fails with what the line that applied a state wrote on
// stderr, if anything.
func (s *Session) applyErrors(sf stateFiles) error {
	msg, err := sf.read(stateErr)
	if err != nil {
		return err
	}
	if msg = bytes.TrimSpace(msg); len(msg) > 0 {
		return errorf(ErrInvalid, "the state could not be applied: the shell said: %s", clipText(string(msg), 500))
	}
	return nil
}

// rehome adapts a state for an isolated session, whose uid owns home: it
// keeps its own HOME (the state's is another uid's), paths under the old
// home move under the new one, and a working directory that does not
// exist there (the files were not copied: that is the files API's
// business) becomes the new home.
func (st *ShellState) rehome(home string) {
	old := st.Env["HOME"]
	st.Env = maps.Clone(st.Env)
	if st.Env == nil {
		st.Env = map[string]string{}
	}
	st.Env["HOME"] = home
	move := func(p string) string {
		if old != "" && old != "/" && (p == old || strings.HasPrefix(p, old+"/")) {
			return home + p[len(old):]
		}
		return p
	}
	if v, ok := st.Env["OLDPWD"]; ok {
		st.Env["OLDPWD"] = move(v)
	}
	st.Cwd = move(st.Cwd)
	if fi, err := os.Stat(st.Cwd); err != nil || !fi.IsDir() {
		st.Cwd = home
	}
	dirs := make([]string, len(st.Dirs))
	for i, d := range st.Dirs {
		dirs[i] = move(d)
	}
	st.Dirs = dirs
}

// has reports whether the state holds a variable of that name.
func (st *ShellState) has(name string) bool {
	if _, ok := st.Env[name]; ok {
		return true
	}
	for _, v := range st.Vars {
		if v.Name == name {
			return true
		}
	}
	return false
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// normalize sorts what has no order of its own and makes absent maps
// empty, so that two reads of one state are equal.
func (st *ShellState) normalize() {
	if st.Env == nil {
		st.Env = map[string]string{}
	}
	if st.Functions == nil {
		st.Functions = map[string]string{}
	}
	if st.Aliases == nil {
		st.Aliases = map[string]string{}
	}
	if st.Options == nil {
		st.Options = map[string]bool{}
	}
	if st.Vars == nil {
		st.Vars = []Var{}
	}
	if st.Readonly == nil {
		st.Readonly = []string{}
	}
	if st.Dirs == nil {
		st.Dirs = []string{}
	}
	if st.NotCarried == nil {
		st.NotCarried = []NotCarried{}
	}
	sort.Slice(st.Vars, func(i, j int) bool { return st.Vars[i].Name < st.Vars[j].Name })
	sort.Strings(st.Readonly)
}

// trl's names in a shell: the nonce-named machinery (see trlName).
var trlMachinery = regexp.MustCompile(`^_trl[0-9a-f]{16}`)

// Variables no state carries: the shells' own (computed, read-only or
// per-process), and trl's (the prompts, its marker). Per dialect lists
// add the shell's own.
var notStateVars = map[string]bool{
	"PS0": true, "PS1": true, "PS2": true, "PS4": true, "PROMPT_COMMAND": true, "HISTFILE": true,
	"TRL_SESSION_ID": true, "PWD": true, "SHLVL": true, "_": true, "PPID": true, "LINENO": true,
	"OPTIND": true, "OPTARG": true, "RPS1": true, "RPS2": true, "PROMPT": true, "PROMPT2": true,
	"PROMPT3": true, "PROMPT4": true, "RPROMPT": true, "RPROMPT2": true, "psvar": true, "PSVAR": true,
}

// reservedName reports whether a variable, function or alias name is
// trl's.
func reservedName(name string) bool { return trlMachinery.MatchString(name) }

// reservedFunctions are names a state may not define as functions: trl's
// lines call `builtin` and `command`, which a function would replace.
var reservedFunctions = map[string]bool{"builtin": true, "command": true}

// CheckState refuses a state that names trl's machinery: its nonce-named
// variables, functions and aliases, the prompt and marker variables it
// owns, the options its protocol needs, and functions that would replace
// `builtin` or `command`.
func CheckState(st *ShellState) error {
	if st == nil {
		return errorf(ErrInvalid, "state is empty")
	}
	var ss stateShell
	switch st.Shell {
	case "sh", "bash", "zsh":
		ss = dialect{name: st.Shell}.state()
	default:
		return errorf(ErrInvalid, "state.shell must be \"sh\", \"bash\" or \"zsh\", got %q", st.Shell)
	}
	bad := func(what, name, why string) error {
		return errorf(ErrInvalid, "state %s %q is refused: %s", what, clipText(name, 80), why)
	}
	const mach = "names of this form are trl's own machinery"
	check := func(what, name string) error {
		switch {
		case reservedName(name):
			return bad(what, name, mach)
		case notStateVars[name] || strings.HasPrefix(name, "TRL_"):
			return bad(what, name, "trl owns it (its prompt, its marker) or the shell sets it itself")
		case !isIdentifier(name):
			return bad(what, name, "not a valid variable name")
		}
		return nil
	}
	for k, v := range st.Env {
		if err := check("env", k); err != nil {
			return err
		}
		if shellState[k] || startupOnly[k] {
			return bad("env", k, "it would change how trl's shell itself runs")
		}
		if strings.ContainsRune(v, 0) && st.Shell != "zsh" {
			return bad("env", k, "its value holds a NUL byte")
		}
	}
	for _, v := range st.Vars {
		if err := check("variable", v.Name); err != nil {
			return err
		}
		if shellState[v.Name] || startupOnly[v.Name] {
			return bad("variable", v.Name, "it would change how trl's shell itself runs")
		}
		switch v.Kind {
		case "scalar", "array", "assoc", "nameref", "integer", "float":
		default:
			return bad("variable", v.Name, "kind must be scalar, array, assoc, nameref, integer or float")
		}
		if v.Kind == "nameref" && !isIdentifier(v.Value) {
			return bad("variable", v.Name, "a nameref must name a variable")
		}
		if len(v.Indices) > 0 && len(v.Indices) != len(v.Array) {
			return bad("variable", v.Name, "indices and array differ in length")
		}
		for _, c := range v.Attrs {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return bad("variable", v.Name, "attrs are letters")
			}
		}
		all := append([]string{v.Value}, v.Array...)
		for k, x := range v.Assoc {
			all = append(all, k, x)
		}
		for _, x := range all {
			if strings.ContainsRune(x, 0) && st.Shell != "zsh" {
				return bad("variable", v.Name, "a value holds a NUL byte (only zsh's values may)")
			}
		}
	}
	for _, n := range st.Readonly {
		if err := check("readonly", n); err != nil {
			return err
		}
	}
	for name, def := range st.Functions {
		if reservedName(name) {
			return bad("function", name, mach)
		}
		if reservedFunctions[name] {
			return bad("function", name, "trl's own lines call it")
		}
		if name == "" || strings.ContainsAny(name, "\x00\n'=") || (strings.ContainsRune(def, 0) && st.Shell != "zsh") {
			return bad("function", name, "not a name trl can define, or a NUL in its text")
		}
		if st.Shell == "sh" {
			return bad("function", name, "dash cannot define functions from a state")
		}
	}
	for name, val := range st.Aliases {
		if reservedName(name) {
			return bad("alias", name, mach)
		}
		if name == "" || strings.ContainsAny(name, "\x00\n'=/$`\\\"") || (strings.ContainsRune(val, 0) && st.Shell != "zsh") {
			return bad("alias", name, "not a name trl can define, or a NUL in its value")
		}
	}
	for name := range st.Options {
		if ss.reservedOption(name) {
			return bad("option", name, "trl's protocol with the shell needs it as it is")
		}
		if name == "promptvars" && !st.Options[name] {
			// A state read here always has it on (the epilogue puts it
			// back); off, the prompt record would be PS1's unexpanded text.
			return bad("option", name, "trl's prompt record needs it on")
		}
		if !isOptionName(name) {
			return bad("option", name, "not an option name")
		}
	}
	if st.Umask != "" {
		if _, err := strconv.ParseUint(st.Umask, 8, 32); err != nil || len(st.Umask) > 4 {
			return bad("umask", st.Umask, "not an octal umask")
		}
	}
	for _, d := range append([]string{st.Cwd}, st.Dirs...) {
		if strings.ContainsRune(d, 0) {
			return bad("directory", d, "it holds a NUL byte")
		}
	}
	if st.Cwd != "" && !filepath.IsAbs(st.Cwd) {
		return bad("cwd", st.Cwd, "not an absolute path")
	}
	return nil
}

func isOptionName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// processNotCarried looks at the shell process for what a state cannot
// carry: file descriptors the user opened (trl's are 0-5, bash keeps 255
// for itself) and resource limits that differ from the daemon's.
func (s *Session) processNotCarried() []NotCarried {
	var out []NotCarried
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid)); err == nil {
		var fds []int
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil || n <= 5 || n == 255 {
				continue
			}
			// dash and zsh keep the terminal open as fd 10 for job
			// control.
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", s.pid, n)); n >= 10 && target == "/dev/tty" {
				continue
			}
			fds = append(fds, n)
		}
		sort.Ints(fds)
		for _, n := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", s.pid, n))
			out = append(out, NotCarried{What: "fd", Detail: fmt.Sprintf("fd %d open on %s", n, target)})
		}
	}
	for _, r := range []struct {
		res  int
		name string
	}{{unix.RLIMIT_NOFILE, "-n (open files)"}, {unix.RLIMIT_CORE, "-c (core size)"}, {unix.RLIMIT_STACK, "-s (stack)"},
		{unix.RLIMIT_NPROC, "-u (processes)"}, {unix.RLIMIT_AS, "-v (address space)"}, {unix.RLIMIT_FSIZE, "-f (file size)"}, {unix.RLIMIT_CPU, "-t (cpu time)"}} {
		var shell, own unix.Rlimit
		if unix.Prlimit(s.pid, r.res, nil, &shell) != nil || unix.Getrlimit(r.res, &own) != nil {
			continue
		}
		if r.res == unix.RLIMIT_NOFILE {
			own = s.noFile
		}
		if shell != own {
			out = append(out, NotCarried{What: "ulimit", Detail: fmt.Sprintf("ulimit %s is soft %s, hard %s (a new session starts with soft %s, hard %s)",
				r.name, limitText(shell.Cur), limitText(shell.Max), limitText(own.Cur), limitText(own.Max))})
		}
	}
	return out
}

func limitText(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// fields reads NUL-terminated fields.
type fields struct {
	b   []byte
	err error
}

func (f *fields) next() string {
	if f.err != nil {
		return ""
	}
	i := bytes.IndexByte(f.b, 0)
	if i < 0 {
		f.err = fmt.Errorf("the state ends early (%d bytes left)", len(f.b))
		return ""
	}
	s := string(f.b[:i])
	f.b = f.b[i+1:]
	return s
}

func (f *fields) int() int {
	s := f.next()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("the state has %q where a count belongs", clipText(s, 40))
	}
	return n
}

// count reads a count of fields to follow: never more than the bytes
// left (each field takes at least its NUL), so a state file written by
// an isolated session cannot make the daemon allocate without bound.
func (f *fields) count() int {
	n := f.int()
	if f.err == nil && (n < 0 || n > len(f.b)) {
		f.err = fmt.Errorf("the state announces %d fields, more than it holds", n)
		return 0
	}
	return n
}

func (f *fields) done() bool { return len(f.b) == 0 || f.err != nil }

// end reads the field after the end mark: the sequence number of the
// line that wrote the state, which must be want (see stateFiles).
func (f *fields) end(want string) error {
	got := f.next()
	if f.err != nil {
		return f.err
	}
	if got != want {
		return fmt.Errorf("the state's end mark is line %q's, not this read's (%q): the reader did not finish", clipText(got, 40), want)
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// umaskText normalises a umask as the shells print it ("0022", "022").
func umaskText(s string) string {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 8, 32); err == nil {
		return fmt.Sprintf("%04o", n)
	}
	return s
}

// trapsNotCarried turns a shell's trap listing into not_carried entries.
func trapsNotCarried(text string) []NotCarried {
	var out []NotCarried
	for _, l := range splitTrapLines(text) {
		out = append(out, NotCarried{What: "trap", Detail: l})
	}
	return out
}

// splitTrapLines splits `trap -- 'cmd' SIG` lines; a quoted command may
// hold newlines, so a line ends only outside quotes.
func splitTrapLines(text string) []string {
	var out []string
	var cur strings.Builder
	inQ := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\'' {
			inQ = !inQ
		}
		if c == '\n' && !inQ {
			if strings.TrimSpace(cur.String()) != "" {
				out = append(out, cur.String())
			}
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}

// jobsNotCarried turns a `jobs` listing into not_carried entries.
func jobsNotCarried(text string) []NotCarried {
	var out []NotCarried
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, NotCarried{What: "job", Detail: strings.TrimSpace(l)})
		}
	}
	return out
}

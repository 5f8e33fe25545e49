package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/internal/callbacks"
	"github.com/trl-project/trl/metrics"
)

// DefaultName is the name of the session exec.* methods use when no
// session_id is given.
const DefaultName = "default"

// Manager keeps the live sessions by id and by name.
type Manager struct {
	opts Options
	log  zerolog.Logger

	mu      sync.Mutex
	byID    map[string]*Session
	byName  map[string]*Session
	pending int // sessions being started, counted against the limit
	names   map[string]bool
	// naming holds the names of sessions being created, each with a
	// channel closed once that creation succeeded or failed.
	naming   map[string]chan struct{}
	closed   bool
	creating sync.Mutex // serialises creation of the default session
	// lastDefault is the id of the last default session created; guarded
	// by creating.
	lastDefault string

	pool    *uidPool // set when isolating
	poolErr error    // why isolation is unavailable: every Create fails

	swept chan struct{} // closed when the start-up sweep has ended

	created callbacks.List[func(*Session)] // OnCreate's callbacks
}

// NewManager returns an empty Manager.
func NewManager(opts Options) *Manager {
	sealInheritedFDs()
	if opts.Subreaper {
		if err := enableReaper(); err != nil {
			opts.Logger.Warn().Err(err).Msg("cannot become child subreaper: processes that leave their session are re-parented to init")
			opts.Subreaper = false
		}
	}
	m := &Manager{
		opts:   opts,
		log:    opts.Logger,
		byID:   map[string]*Session{},
		byName: map[string]*Session{},
		names:  map[string]bool{},
		naming: map[string]chan struct{}{},
		swept:  make(chan struct{}),
	}
	if opts.Subreaper {
		// Only a daemon sweeps: the groups' processes may be its children.
		// What a dead daemon left never delays this one's start: its names
		// carry the dead pid, so nothing the sweep touches is ours.
		go m.sweep()
	} else {
		close(m.swept)
	}
	if opts.Isolation != nil {
		// Fail closed: without a pool no session starts, rather than one
		// starting unisolated.
		if m.poolErr = CheckIsolationPrivilege(); m.poolErr == nil {
			m.pool, m.poolErr = newUIDPool(*opts.Isolation)
		}
		if m.poolErr != nil {
			opts.Logger.Error().Err(m.poolErr).Msg("isolation unavailable: no session can be created")
		}
	}
	return m
}

// sweep ends and removes what a daemon that died without cleaning up left:
// its session groups' processes and its session directories.
func (m *Manager) sweep() {
	defer close(m.swept)
	t0 := time.Now()
	groups, dirs := sweepStaleCgroups()+sweepStaleV1Groups(), sweepStaleTempDirs()
	ev := m.log.Debug()
	if groups+dirs > 0 {
		ev = m.log.Warn()
	}
	ev.Int("groups", groups).Int("dirs", dirs).Dur("took", time.Since(t0)).
		Msg("swept what daemons that died without cleaning up left (their processes ended, their session directories removed)")
}

// Create validates cfg, starts a shell and registers the session.
func (m *Manager) Create(cfg Config) (*Session, error) {
	defaultDir := cfg.WorkingDir == ""
	if err := normalize(&cfg); err != nil {
		return nil, err
	}
	cfg.Limits = m.opts.Limits.Over(cfg.Limits)
	if err := cfg.Limits.Check(); err != nil {
		return nil, err
	}
	if !cfg.Limits.IsZero() {
		v, err := limitsVersion(cfg.Limits)
		if err != nil {
			return nil, errorf(ErrInvalid, "limits cannot be set on this host: %v; run the daemon where cgroup v2 is delegated to it (or cgroup v1 is writable), or leave limits out", err)
		}
		cfg.cgroupVersion = v
	}
	if m.opts.Isolation != nil && m.poolErr != nil {
		return nil, errorf(ErrStart, "isolation is unavailable, so no session can be created: %v", m.poolErr)
	}
	m.mu.Lock()
	// A name another call is creating a session with is decided by that
	// call: waited for, it is either taken (ErrNameTaken, and the session
	// is there for whoever looks it up next) or free again. Two agents
	// that create one named session at once thus see it exist, never a
	// name taken by a session that cannot be found yet.
	for cfg.Name != "" && !m.closed {
		wait, ok := m.naming[cfg.Name]
		if !ok {
			break
		}
		m.mu.Unlock()
		<-wait
		m.mu.Lock()
	}
	if m.closed {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	// A name held by a session whose shell has exited is free again: the
	// old session is closed and forgotten.
	if old, ok := m.byName[cfg.Name]; ok && cfg.Name != "" && old.hasExited() {
		m.remove(old)
		m.mu.Unlock()
		old.Close()
		m.mu.Lock()
	}
	if len(m.byID)+m.pending >= m.opts.maxSessions() {
		// Sessions whose shell has exited do not count: they are reaped
		// (closed and forgotten) to make room.
		var reaped []*Session
		for _, s := range m.byID {
			if s.hasExited() {
				m.remove(s)
				reaped = append(reaped, s)
			}
		}
		if len(reaped) > 0 {
			m.mu.Unlock()
			for _, s := range reaped {
				s.Close()
			}
			m.mu.Lock()
		}
	}
	if len(m.byID)+m.pending >= m.opts.maxSessions() {
		m.mu.Unlock()
		return nil, errorf(ErrLimit, "%d sessions are live (the --max-sessions limit); destroy one first", m.opts.maxSessions())
	}
	if cfg.Name != "" {
		if m.names[cfg.Name] {
			m.mu.Unlock()
			return nil, errorf(ErrNameTaken, "a live session is already named %q; pick another name or destroy it", cfg.Name)
		}
		m.names[cfg.Name] = true
		created := make(chan struct{})
		m.naming[cfg.Name] = created
		defer func() {
			m.mu.Lock()
			delete(m.naming, cfg.Name)
			m.mu.Unlock()
			close(created)
		}()
	}
	m.pending++
	m.mu.Unlock()

	var l *lease
	var err error
	if m.pool != nil {
		if l, err = m.pool.acquire(cfg.IsolationKey); err == nil && defaultDir {
			cfg.WorkingDir = l.home
		}
	}
	var s *Session
	if err == nil {
		// launchSession owns the lease from here, on every path.
		s, err = launchSession(NewID("s-", 6), cfg, m.opts, m.log, l)
	}
	if err == nil {
		err = s.startWithState(cfg, m.opts) // closes s on failure
	}
	var told []*func(*Session)
	if err == nil {
		told = m.created.Load()
		for _, f := range told {
			(*f)(s)
		}
	}

	m.mu.Lock()
	m.pending--
	if err != nil {
		delete(m.names, cfg.Name)
		m.mu.Unlock()
		return nil, err
	}
	if m.closed {
		m.mu.Unlock()
		s.Close()
		return nil, ErrShuttingDown
	}
	m.byID[s.id] = s
	if cfg.Name != "" {
		m.byName[cfg.Name] = s
	}
	m.mu.Unlock()
	// A callback added meanwhile may have listed the sessions before
	// this one was registered: it is told now.
	for _, f := range m.created.Load() {
		if !slices.Contains(told, f) {
			(*f)(s)
		}
	}
	s.log.Info().Str("shell", cfg.Shell).Str("name", cfg.Name).Msg("session created")
	metrics.Get().SessionCreated()
	return s, nil
}

// OnCreate calls f with each session created from now on, before it is
// registered: no request can have reached it yet, so f sees its every
// command. (A session whose creation was past that point when f was
// added is told just after it is registered, so that f, having listed the
// sessions, misses none.) f runs on the creating request's goroutine and
// must not block for long; remove stops the calls.
func (m *Manager) OnCreate(f func(*Session)) (remove func()) { return m.created.Add(f) }

// normalize applies defaults and checks cfg.
func normalize(cfg *Config) error {
	if cfg.Shell == "" && cfg.State != nil && (cfg.State.Shell == "bash" || cfg.State.Shell == "zsh") {
		cfg.Shell = cfg.State.Shell // a carried state names its shell
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if strings.ContainsRune(cfg.Shell, 0) {
		return errorf(ErrInvalid, "shell contains a NUL byte")
	}
	if !strings.Contains(cfg.Shell, "/") {
		p, err := exec.LookPath(cfg.Shell)
		if err != nil {
			return errorf(ErrInvalid, "shell %q is not on PATH", cfg.Shell)
		}
		cfg.Shell = p
	}
	if fi, err := os.Stat(cfg.Shell); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errorf(ErrInvalid, "shell %q is not an executable file", cfg.Shell)
	}
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = "/tmp"
	}
	if strings.ContainsRune(cfg.WorkingDir, 0) {
		return errorf(ErrInvalid, "working_dir contains a NUL byte")
	}
	if !filepath.IsAbs(cfg.WorkingDir) {
		return errorf(ErrInvalid, "working_dir %q must be an absolute path", cfg.WorkingDir)
	}
	if fi, err := os.Stat(cfg.WorkingDir); err != nil {
		return errorf(ErrInvalid, "working_dir %q does not exist", cfg.WorkingDir)
	} else if !fi.IsDir() {
		return errorf(ErrInvalid, "working_dir %q is not a directory", cfg.WorkingDir)
	}
	cfg.WorkingDir = filepath.Clean(cfg.WorkingDir)
	if err := CheckEnv(cfg.Env); err != nil {
		return err
	}
	if err := CheckEnv(cfg.Secrets); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	for k := range cfg.Secrets {
		if _, ok := cfg.Env[k]; ok {
			return errorf(ErrInvalid, "%s is both in env and in secrets; give it once", k)
		}
		if shellState[k] || startupOnly[k] {
			return errorf(ErrInvalid, "secret %s would change how trl's shell itself runs and is not accepted", k)
		}
	}
	if cfg.State != nil {
		if err := CheckState(cfg.State); err != nil {
			return err
		}
		if d := dialectFor(cfg.Shell); d.name != cfg.State.Shell {
			return errorf(ErrInvalid, "state is of a %s session; shell %s is %s", cfg.State.Shell, cfg.Shell, d.name)
		}
	}
	for k := range cfg.Env {
		if shellState[k] {
			return errorf(ErrInvalid, "env %s would change how trl's shell itself runs and is not accepted at session.create; set it inside a command (export %s=...) if a command needs it", k, k)
		}
	}
	if len(cfg.Name) > 128 || !utf8.ValidString(cfg.Name) || strings.ContainsFunc(cfg.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errorf(ErrInvalid, "name must be at most 128 bytes of printable UTF-8")
	}
	if idShaped(cfg.Name) {
		// A client that names a session it has lost by its id (destroyed,
		// or of a daemon that restarted) would get a new one under that
		// name, and later read it for the old.
		return errorf(ErrInvalid, "%s has the form of a session id (s- and 12 hex digits), which no name may have: no session has that id now (it ended, or belongs to another daemon); create one with another name", cfg.Name)
	}
	if cfg.Timeout < 0 {
		return errorf(ErrInvalid, "timeout_s must not be negative")
	}
	if cfg.Rows == 0 {
		cfg.Rows = 24
	}
	if cfg.Cols == 0 {
		cfg.Cols = 80
	}
	if cfg.Rows < 1 || cfg.Rows > 1000 || cfg.Cols < 1 || cfg.Cols > 1000 {
		return errorf(ErrInvalid, "rows and cols must be between 1 and 1000")
	}
	return nil
}

// CheckEnv checks variable names and values: names are shell identifiers,
// values hold no NUL byte.
func CheckEnv(env map[string]string) error {
	for k, v := range env {
		if !isIdentifier(k) {
			return errorf(ErrInvalid, "env name %q is not a valid variable name (letters, digits and _, not starting with a digit)", k)
		}
		if strings.ContainsRune(v, 0) {
			return errorf(ErrInvalid, "env %s's value contains a NUL byte", k)
		}
		if strings.HasPrefix(k, "TRL_") {
			return errorf(ErrInvalid, "env name %s: names starting with TRL_ are trl's own (TRL_SESSION_ID marks a session's processes) and cannot be set", k)
		}
	}
	return nil
}

// CheckCommandEnv checks a command's own variables (exec.run's env): as
// CheckEnv, and none of the variables that are trl's shell's own (its
// prompt is read-only: dash refused the line, and bash ignored the
// assignment and showed trl's prompt record to `echo $PS1`).
func CheckCommandEnv(env map[string]string) error {
	if err := CheckEnv(env); err != nil {
		return err
	}
	for k := range env {
		if shellState[k] {
			return errorf(ErrInvalid, "env %s is trl's shell's own and cannot be set for a command; to give a program one, set it in the command: env %s=... program", k, k)
		}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Get finds a live session by id or, failing that, by name. Ids and names
// are matched exactly, byte for byte.
func (m *Manager) Get(ref string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[ref]; ok {
		return s, nil
	}
	if s, ok := m.byName[ref]; ok {
		return s, nil
	}
	return nil, errorf(ErrNotFound, "no session with id or name %.64q; session.list shows the live ones", ref)
}

// Default returns the session named "default", creating it with default
// settings on first use, and anew when its shell has exited.
func (m *Manager) Default() (*Session, error) {
	m.creating.Lock()
	defer m.creating.Unlock()
	if s, err := m.Get(DefaultName); err == nil && s.Info().State != StateExited {
		return s, nil
	}
	s, err := m.Create(Config{Name: DefaultName})
	if err != nil {
		return nil, err
	}
	if m.lastDefault != "" {
		// The default session before this one ended (its shell exited,
		// or it was destroyed): the first command here says that its
		// directory and variables are gone.
		old := m.lastDefault
		s.replaced.Store(&old)
	}
	m.lastDefault = s.id
	return s, nil
}

// List returns the live sessions, oldest first.
func (m *Manager) List() []*Session {
	m.mu.Lock()
	out := make([]*Session, 0, len(m.byID))
	for _, s := range m.byID {
		out = append(out, s)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// MaxSessions is the configured cap on live sessions.
func (m *Manager) MaxSessions() int { return m.opts.maxSessions() }

// Len is the number of live sessions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// Destroy ends a session and every process it started. A busy session is
// destroyed only with force.
func (m *Manager) Destroy(ref string, force bool) (*Session, error) {
	s, err := m.Get(ref)
	if err != nil {
		return nil, err
	}
	if err := s.Retire(force); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.byID[s.id] != s {
		m.mu.Unlock()
		return nil, errorf(ErrNotFound, "session %s is already being destroyed", s.id)
	}
	m.remove(s)
	m.mu.Unlock()
	s.CloseWith(fmt.Errorf("%w by session.destroy", ErrDestroyed))
	s.log.Info().Msg("session destroyed")
	return s, nil
}

// remove forgets s. Called with m.mu held.
func (m *Manager) remove(s *Session) {
	delete(m.byID, s.id)
	if s.cfg.Name != "" {
		delete(m.byName, s.cfg.Name)
		delete(m.names, s.cfg.Name)
	}
}

// CloseAll ends every session and refuses new ones.
func (m *Manager) CloseAll() {
	m.mu.Lock()
	m.closed = true
	all := make([]*Session, 0, len(m.byID))
	for _, s := range m.byID {
		all = append(all, s)
		m.remove(s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.CloseWith(ErrShutdown)
		}()
	}
	wg.Wait()
	<-m.swept
}

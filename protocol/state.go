package protocol

// Session state (SPEC §17): session.state reads a session's shell state,
// session.fork starts a new session with it, and session.create's state
// param applies a saved one (from this daemon or another).
const (
	MethodSessionState = "session.state"
	MethodSessionFork  = "session.fork"
)

// ShellState is session.state's result and session.create's state
// param. Its JSON is the state a client saves and carries.
type ShellState struct {
	// Shell is the dialect: "sh" (dash), "bash" or "zsh".
	Shell string `json:"shell"`
	Cwd   string `json:"cwd"`
	// Env is the exported scalar variables.
	Env map[string]string `json:"env"`
	// Vars is every other shell variable (arrays included), by name.
	Vars []StateVar `json:"vars"`
	// Readonly names the readonly variables of env and vars.
	Readonly []string `json:"readonly"`
	// Functions maps a name to its definition as the shell prints it.
	Functions map[string]string `json:"functions"`
	Aliases   map[string]string `json:"aliases"`
	// Options are set -o options and bash's shopt or zsh's setopt ones.
	Options map[string]bool `json:"options"`
	Umask   string          `json:"umask"`
	// Dirs is the directory stack below the current directory.
	Dirs []string `json:"dirs"`
	// NotCarried lists what the session has that a state cannot carry
	// (traps, background jobs, open fds, changed ulimits, ...).
	NotCarried []StateNotCarried `json:"not_carried"`
}

// StateVar is one shell variable of a state.
type StateVar struct {
	Name string `json:"name"`
	// Kind is scalar, array, assoc, nameref (bash), integer or float (zsh).
	Kind    string            `json:"kind"`
	Value   string            `json:"value,omitempty"`
	Array   []string          `json:"array,omitempty"`
	Indices []int             `json:"indices,omitempty"`
	Assoc   map[string]string `json:"assoc,omitempty"`
	Attrs   string            `json:"attrs,omitempty"`
}

// StateNotCarried is one thing a state does not carry.
type StateNotCarried struct {
	What   string `json:"what"`
	Detail string `json:"detail"`
}

// SessionForkParams are session.fork's parameters: the source, and
// session.create's parameters for the new session (its shell is the
// source's unless shell names another binary of the same kind;
// working_dir and env, when given, override the state's).
type SessionForkParams struct {
	SessionID  string            `json:"session_id"`
	Shell      string            `json:"shell"`
	Env        map[string]string `json:"env"`
	WorkingDir string            `json:"working_dir"`
	Name       string            `json:"name"`
	TimeoutS   *float64          `json:"timeout_s"`
	Rows       *int              `json:"rows"`
	Cols       *int              `json:"cols"`
}

package protocol

// The file methods (SPEC §15). Every one takes session_id like exec.*:
// absent means the session named "default". Paths are absolute or
// relative to the session's current directory.
const (
	MethodFSRead   = "fs.read"
	MethodFSWrite  = "fs.write"
	MethodFSEdit   = "fs.edit"
	MethodFSList   = "fs.list"
	MethodFSStat   = "fs.stat"
	MethodFSMkdir  = "fs.mkdir"
	MethodFSRemove = "fs.remove"
	MethodFSMove   = "fs.move"
)

// The encodings of file data: "utf-8" text as is, "base64" any bytes;
// "auto" (fs.read's default) answers UTF-8 text as is and anything else in
// base64.
const (
	EncodingAuto   = "auto"
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// FSReadParams are fs.read's parameters. LineOffset (1-based) or
// LineLimit read whole text lines instead of bytes from Offset.
type FSReadParams struct {
	SessionID  string `json:"session_id,omitempty"`
	Path       string `json:"path"`
	Offset     int64  `json:"offset,omitempty"`
	Length     int64  `json:"length,omitempty"`
	Encoding   string `json:"encoding,omitempty"`
	LineOffset int    `json:"line_offset,omitempty"`
	LineLimit  int    `json:"line_limit,omitempty"`
}

// FSReadResult is one chunk of a file: Length is this chunk's real length
// in bytes (of the file, before encoding), Complete is true at the end.
type FSReadResult struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
	Complete bool   `json:"complete"`
	Mode     string `json:"mode"`
	MTime    string `json:"mtime"`
	// LineOffset and Lines, for a read by lines: the first line's number
	// and how many lines Data holds.
	LineOffset int `json:"line_offset,omitempty"`
	Lines      int `json:"lines,omitempty"`
	// Masked is set when Data had the session's secrets replaced by ***
	// (Length still counts the file's bytes).
	Masked bool `json:"masked,omitempty"`
}

// FSWriteParams are fs.write's parameters. Mode is octal text ("0644");
// absent keeps an existing file's mode. CreateDirs defaults to true.
type FSWriteParams struct {
	SessionID  string  `json:"session_id,omitempty"`
	Path       string  `json:"path"`
	Data       *string `json:"data"`
	Encoding   string  `json:"encoding,omitempty"`
	Mode       string  `json:"mode,omitempty"`
	Append     bool    `json:"append,omitempty"`
	CreateDirs *bool   `json:"create_dirs,omitempty"`
	IfSHA256   string  `json:"if_sha256,omitempty"`
}

// FSWriteResult is what a write left: the file's size and the SHA-256 of
// its content (hex), to pass as if_sha256 next time.
type FSWriteResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// FSEditParams are fs.edit's parameters.
type FSEditParams struct {
	SessionID  string  `json:"session_id,omitempty"`
	Path       string  `json:"path"`
	Old        *string `json:"old"`
	New        *string `json:"new"`
	ReplaceAll bool    `json:"replace_all"`
}

// FSLine is one numbered line (1-based).
type FSLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// FSEditResult is what an edit changed: the lines of the new file that
// hold replaced text.
type FSEditResult struct {
	Path         string   `json:"path"`
	Size         int64    `json:"size"`
	SHA256       string   `json:"sha256"`
	Replacements int      `json:"replacements"`
	Lines        []FSLine `json:"lines"`
	LinesCut     bool     `json:"lines_cut,omitempty"`
}

// FSListParams are fs.list's parameters. Path defaults to the session's
// current directory, Depth to 1 (at most 8), Limit to 1000, Hidden to
// true.
type FSListParams struct {
	SessionID string `json:"session_id,omitempty"`
	Path      string `json:"path"`
	Depth     int    `json:"depth,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	Hidden    *bool  `json:"hidden,omitempty"`
}

// FSEntry describes one file as lstat sees it: Type is file, dir,
// symlink or other; Target is a symlink's.
type FSEntry struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Type   string `json:"type"`
	Size   int64  `json:"size"`
	Mode   string `json:"mode"`
	MTime  string `json:"mtime"`
	Target string `json:"target,omitempty"`
}

// FSListResult is one page of a listing, sorted by path.
type FSListResult struct {
	Path     string    `json:"path"`
	Entries  []FSEntry `json:"entries"`
	Total    int       `json:"total"`
	Complete bool      `json:"complete"`
}

// FSPathParams name one file (fs.stat).
type FSPathParams struct {
	SessionID string `json:"session_id,omitempty"`
	Path      string `json:"path"`
}

// FSMkdirParams are fs.mkdir's parameters.
type FSMkdirParams struct {
	SessionID string `json:"session_id,omitempty"`
	Path      string `json:"path"`
	Parents   bool   `json:"parents"`
}

// FSRemoveParams are fs.remove's parameters.
type FSRemoveParams struct {
	SessionID string `json:"session_id,omitempty"`
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// FSMoveParams are fs.move's parameters.
type FSMoveParams struct {
	SessionID string `json:"session_id,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite"`
}

// FSPathResult names the file an operation made (fs.mkdir).
type FSPathResult struct {
	Path string `json:"path"`
}

// FSRemoveResult says how many entries fs.remove removed.
type FSRemoveResult struct {
	Path    string `json:"path"`
	Removed int    `json:"removed"`
}

// FSMoveResult names both ends of a move.
type FSMoveResult struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// encodeFields encodes an FSReadResult as encoding/json would, without
// reflection: a chunk of up to 4 MiB is the whole of most answers, and
// reflection's string encoder was half of fs.read's time.
func (r *FSReadResult) encodeFields(e *encoder) {
	e.key(`"path":`)
	e.str(r.Path)
	e.key(`,"size":`)
	e.int(r.Size)
	e.key(`,"offset":`)
	e.int(r.Offset)
	e.key(`,"length":`)
	e.int(r.Length)
	e.key(`,"data":`)
	e.str(r.Data)
	e.key(`,"encoding":`)
	e.str(r.Encoding)
	e.key(`,"complete":`)
	e.bool(r.Complete)
	e.key(`,"mode":`)
	e.str(r.Mode)
	e.key(`,"mtime":`)
	e.str(r.MTime)
	if r.LineOffset != 0 {
		e.key(`,"line_offset":`)
		e.int(int64(r.LineOffset))
	}
	if r.Lines != 0 {
		e.key(`,"lines":`)
		e.int(int64(r.Lines))
	}
}

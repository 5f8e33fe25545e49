package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/protocol"
)

// The file tools (SPEC §15): read_file, write_file, edit_file and
// list_dir over fs.*. What a model reads is a source file the way an
// editor shows it — numbered lines, a page at a time, and a last line
// that says exactly which lines were left out and the call that reads
// on — never base64: a binary file is described, not dumped.

// Bounds of the file tools.
const (
	defaultFileLines = 200      // lines read_file shows when line_limit is not given
	fileTextCap      = 64 << 10 // bytes of a file one read_file shows at most
	lineCap          = 2000     // characters of one line shown; the rest is said, not shown
	countLinesUpTo   = 4 << 20  // a bigger file's line count is not worked out
	listLimit        = 500      // entries list_dir shows at most
	editLinesShown   = 50       // changed lines edit_file shows at most
	maxListDepthTool = 8        // as fs.list
	numberWidth      = 6        // cat -n's
	binarySniff      = 8 << 10  // bytes looked at for a NUL
)

// ReadFileInput is the read_file tool's input.
type ReadFileInput struct {
	Path       string `json:"path" jsonschema:"the file: absolute, or relative to the session's current directory"`
	Session    string `json:"session,omitempty" jsonschema:"session id or name whose files and user to act as (default: default)"`
	LineOffset int    `json:"line_offset,omitempty" jsonschema:"the first line to show (1-based; default 1)"`
	LineLimit  int    `json:"line_limit,omitempty" jsonschema:"the most lines to show (default 200)"`
}

// FileView is read_file's structured content: which lines of which file
// were shown (the text itself is in the content, numbered).
type FileView struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mode  string `json:"mode"`
	MTime string `json:"mtime"`
	// Binary is set for a file that is not text: nothing of it is shown.
	Binary bool `json:"binary"`
	// FirstLine and LastLine are the lines shown (0 when none);
	// TotalLines the file's, -1 when it was not counted (a big file).
	FirstLine  int `json:"first_line"`
	LastLine   int `json:"last_line"`
	TotalLines int `json:"total_lines"`
	// NextLineOffset is the line_offset that reads on (0 at the end).
	NextLineOffset int `json:"next_line_offset,omitempty"`
	// SHA256 is the content's, when the whole file was read: write_file's
	// if_sha256.
	SHA256 string `json:"sha256,omitempty"`

	asked int // the line_offset asked for
}

func (s *server) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadFileInput) (*mcp.CallToolResult, any, error) {
	if in.LineOffset < 0 || in.LineLimit < 0 {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "line_offset and line_limit must not be negative")), nil, nil
	}
	first := max(in.LineOffset, 1)
	limit := in.LineLimit
	if limit == 0 {
		limit = defaultFileLines
	}
	ctx = s.ctx(ctx)
	r, err := s.api.FSRead(ctx, protocol.FSReadParams{SessionID: in.Session, Path: in.Path, LineOffset: first, LineLimit: limit, Length: fileTextCap})
	if err != nil {
		return toolError(err), nil, nil
	}
	v := FileView{Path: r.Path, Size: r.Size, Mode: r.Mode, MTime: r.MTime, TotalLines: -1, asked: first}
	if r.Encoding == protocol.EncodingBase64 || strings.IndexByte(r.Data[:min(len(r.Data), binarySniff)], 0) >= 0 {
		v.Binary = true
		return result(fmt.Sprintf("[%s is a binary file of %s (mode %s); it is not shown. Look into it with run, e.g. `xxd %s | head` or `file %s`]",
			r.Path, bytesText(r.Size), r.Mode, shellQuote(r.Path), shellQuote(r.Path)), v), nil, nil
	}
	if r.Size == 0 {
		v.TotalLines = 0
		return result(fmt.Sprintf("[%s is empty (0 bytes)]", r.Path), v), nil, nil
	}
	var b strings.Builder
	text := r.Data
	longCut := false // one line longer than the read: cut
	if r.Lines > 0 {
		v.FirstLine, v.LastLine = r.LineOffset, r.LineOffset+r.Lines-1
		if !r.Complete && r.Lines == 1 && !strings.HasSuffix(text, "\n") {
			longCut = true
		}
		for i, line := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
			line = strings.TrimSuffix(line, "\n")
			if n := utf8.RuneCountInString(line); n > lineCap {
				cut := line[:runeOffset(line, lineCap)]
				line = fmt.Sprintf("%s[… %d more characters of this line not shown]", cut, n-lineCap)
			}
			fmt.Fprintf(&b, "%*d\t%s\n", numberWidth, v.FirstLine+i, line)
		}
	}
	// How many lines the file has: known at the end, counted for a file
	// small enough.
	end := r.Offset + r.Length
	switch {
	case r.Complete:
		v.TotalLines = max(v.LastLine, first-1)
		if r.Lines == 0 && r.Size <= countLinesUpTo { // line_offset past the end
			v.TotalLines = s.countLines(ctx, in.Session, r.Path, 0, r.Size)
		}
	case r.Size <= countLinesUpTo && !longCut:
		if n := s.countLines(ctx, in.Session, r.Path, end, r.Size); n >= 0 {
			v.TotalLines = v.LastLine + n
		}
	}
	if !r.Complete && !longCut {
		v.NextLineOffset = v.LastLine + 1
	}
	if r.Complete && r.Offset == 0 && r.Length == r.Size {
		h := sha256.Sum256([]byte(text))
		v.SHA256 = hex.EncodeToString(h[:])
	}
	b.WriteString(v.statusLine(longCut))
	return result(b.String(), v), nil, nil
}

// statusLine says which lines were shown of how many, and how to read on.
func (v FileView) statusLine(longCut bool) string {
	of := "of " + countText(int64(v.TotalLines))
	if v.TotalLines < 0 {
		of = "of a file of " + bytesText(v.Size) + " (lines not counted)"
	}
	if v.LastLine == 0 {
		if v.TotalLines < 0 {
			return fmt.Sprintf("[%s: no line %s; the file, of %s, has fewer lines]", v.Path, countText(int64(v.asked)), bytesText(v.Size))
		}
		return fmt.Sprintf("[%s: no line %s; the file has %s]", v.Path, countText(int64(v.asked)), plural(v.TotalLines, "line", "lines"))
	}
	shown := fmt.Sprintf("lines %s–%s %s", countText(int64(v.FirstLine)), countText(int64(v.LastLine)), of)
	if v.FirstLine == v.LastLine {
		shown = fmt.Sprintf("line %s %s", countText(int64(v.FirstLine)), of)
	}
	var parts []string
	if v.FirstLine > 1 {
		parts = append(parts, fmt.Sprintf("lines 1–%s not shown (line_offset=1 reads them)", countText(int64(v.FirstLine-1))))
	}
	switch {
	case longCut:
		parts = append(parts, fmt.Sprintf("the line is longer than %s and is cut there; read it with run, e.g. `sed -n %dp %s | cut -c1-4000`", bytesText(fileTextCap), v.FirstLine, shellQuote(v.Path)))
	case v.NextLineOffset > 0:
		parts = append(parts, fmt.Sprintf("more: call read_file with line_offset=%d", v.NextLineOffset))
	case v.FirstLine == 1:
		parts = append(parts, "the whole file")
	default:
		parts = append(parts, "to the end of the file")
	}
	return fmt.Sprintf("[%s: %s; %s]", v.Path, shown, strings.Join(parts, "; "))
}

// countLines counts the lines of path from byte from to size: the
// newlines, and a last line without one. -1 when it could not.
func (s *server) countLines(ctx context.Context, session, p string, from, size int64) int {
	n := 0
	last := byte('\n')
	for from < size {
		r, err := s.api.FSRead(ctx, protocol.FSReadParams{SessionID: session, Path: p, Offset: from, Length: min(size-from, countLinesUpTo), Encoding: protocol.EncodingBase64})
		if err != nil || r.Length == 0 {
			return -1
		}
		b, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			return -1
		}
		n += bytes.Count(b, []byte{'\n'})
		last = b[len(b)-1]
		from += r.Length
		if r.Complete {
			break
		}
	}
	if last != '\n' {
		n++
	}
	return n
}

// WriteFileInput is the write_file tool's input.
type WriteFileInput struct {
	Path     string `json:"path" jsonschema:"the file: absolute, or relative to the session's current directory; missing parent directories are made"`
	Content  string `json:"content" jsonschema:"the whole new content of the file (text)"`
	Session  string `json:"session,omitempty" jsonschema:"session id or name whose files and user to act as (default: default)"`
	IfSHA256 string `json:"if_sha256,omitempty" jsonschema:"write only if the file's content still has this SHA-256 (from read_file or a previous write): nothing is overwritten that you have not seen"`
}

func (s *server) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteFileInput) (*mcp.CallToolResult, any, error) {
	w, err := s.api.FSWrite(s.ctx(ctx), protocol.FSWriteParams{SessionID: in.Session, Path: in.Path, Data: &in.Content, IfSHA256: in.IfSHA256})
	if err != nil {
		return toolError(err), nil, nil
	}
	lines := strings.Count(in.Content, "\n")
	if in.Content != "" && !strings.HasSuffix(in.Content, "\n") {
		lines++
	}
	return result(fmt.Sprintf("wrote %s: %s lines, %s [sha256 %s]", w.Path, countText(int64(lines)), bytesText(w.Size), w.SHA256), w), nil, nil
}

// EditFileInput is the edit_file tool's input.
type EditFileInput struct {
	Path       string `json:"path" jsonschema:"the file: absolute, or relative to the session's current directory"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, whitespace and indentation included; it must occur once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string"`
	Session    string `json:"session,omitempty" jsonschema:"session id or name whose files and user to act as (default: default)"`
}

func (s *server) editFile(ctx context.Context, _ *mcp.CallToolRequest, in EditFileInput) (*mcp.CallToolResult, any, error) {
	e, err := s.api.FSEdit(s.ctx(ctx), protocol.FSEditParams{SessionID: in.Session, Path: in.Path, Old: &in.OldString, New: &in.NewString, ReplaceAll: in.ReplaceAll})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	times := "1 replacement"
	if e.Replacements != 1 {
		times = countText(int64(e.Replacements)) + " replacements"
	}
	fmt.Fprintf(&b, "edited %s: %s; the changed lines now read:\n", e.Path, times)
	for i, l := range e.Lines {
		if i == editLinesShown {
			fmt.Fprintf(&b, "[… %s more changed lines not shown; read_file shows them]\n", countText(int64(len(e.Lines)-i)))
			break
		}
		text := l.Text
		if n := utf8.RuneCountInString(text); n > lineCap {
			text = fmt.Sprintf("%s[… %d more characters of this line not shown]", text[:runeOffset(text, lineCap)], n-lineCap)
		}
		fmt.Fprintf(&b, "%*d\t%s\n", numberWidth, l.Line, text)
	}
	if e.LinesCut {
		b.WriteString("[more changed lines were left out; read_file shows them]\n")
	}
	fmt.Fprintf(&b, "[the file is now %s; sha256 %s]", bytesText(e.Size), e.SHA256)
	return result(b.String(), e), nil, nil
}

// ListDirInput is the list_dir tool's input.
type ListDirInput struct {
	Path    string `json:"path,omitempty" jsonschema:"the directory: absolute, or relative to the session's current directory (default: the current directory)"`
	Depth   int    `json:"depth,omitempty" jsonschema:"levels to descend (default 1, at most 8)"`
	Session string `json:"session,omitempty" jsonschema:"session id or name whose files and user to act as (default: default)"`
}

func (s *server) listDir(ctx context.Context, _ *mcp.CallToolRequest, in ListDirInput) (*mcp.CallToolResult, any, error) {
	if in.Depth > maxListDepthTool {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "depth must be 1 to %d, got %d", maxListDepthTool, in.Depth)), nil, nil
	}
	l, err := s.api.FSList(s.ctx(ctx), protocol.FSListParams{SessionID: in.Session, Path: in.Path, Depth: in.Depth, Limit: listLimit})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	for _, e := range l.Entries {
		rel := strings.TrimPrefix(strings.TrimPrefix(e.Path, l.Path), "/")
		if rel == "" {
			rel = path.Base(e.Path)
		}
		switch e.Type {
		case "dir":
			fmt.Fprintf(&b, "%s/\n", rel)
		case "symlink":
			fmt.Fprintf(&b, "%s -> %s\n", rel, e.Target)
		case "file":
			fmt.Fprintf(&b, "%s\t%s\n", rel, bytesText(e.Size))
		default:
			fmt.Fprintf(&b, "%s\t(%s)\n", rel, e.Type)
		}
	}
	shown := len(l.Entries)
	switch {
	case l.Total == 0:
		fmt.Fprintf(&b, "[%s is empty]", l.Path)
	case l.Complete:
		fmt.Fprintf(&b, "[%s: %s]", l.Path, plural(l.Total, "entry", "entries"))
	default:
		fmt.Fprintf(&b, "[%s: the first %s of %s, sorted by path; list a subdirectory, or a smaller depth, to see the rest]", l.Path, countText(int64(shown)), plural(l.Total, "entry", "entries"))
	}
	return result(b.String(), l), nil, nil
}

// countText is n with thousands separated by commas (1,204).
func countText(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return countText(int64(n)) + " " + many
}

// bytesText is a size a person reads: exact bytes, and the unit size
// beside it when it is big.
func bytesText(n int64) string {
	exact := plural(int(n), "byte", "bytes")
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%s (%.1f GiB)", exact, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%s (%.1f MiB)", exact, float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%s (%.0f KiB)", exact, float64(n)/(1<<10))
	}
	return exact
}

// runeOffset is the byte offset of s's n-th character.
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// shellQuote quotes p for a shell command line a model may copy.
func shellQuote(p string) string {
	if strings.IndexFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ',' || r == ':' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// Package golden reads and writes the golden conversations of
// testdata/conversations: txtar archives whose comment says what the
// conversation pins, whose "requests" file holds the lines a client sends,
// and whose "stdio", "socket" and "http" files hold the responses each
// transport must give, normalised (ids, times and sizes that change from
// run to run are replaced by placeholders). A conversation runs on each
// transport it has a file for. Tests with -update rewrite those files.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/tools/txtar"
)

// Transports a conversation may name.
var Transports = []string{"stdio", "socket", "http"}

// Conversation is one parsed archive.
type Conversation struct {
	Path    string
	archive *txtar.Archive
}

// Step is one line of the requests: a message to send (Line, without its
// newline) or a pause ("!sleep <duration>": the sender waits before the
// next message, for a conversation whose point is what happens meanwhile).
type Step struct {
	Line  string
	Sleep time.Duration
}

// Load reads the archive at path.
func Load(path string) (*Conversation, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &Conversation{Path: path, archive: a}
	if c.file("requests") == nil {
		return nil, fmt.Errorf("%s: no requests file", path)
	}
	return c, nil
}

func (c *Conversation) file(name string) *txtar.File {
	for i := range c.archive.Files {
		if c.archive.Files[i].Name == name {
			return &c.archive.Files[i]
		}
	}
	return nil
}

// Steps returns the requests, in order.
func (c *Conversation) Steps() ([]Step, error) {
	var steps []Step
	for _, line := range strings.SplitAfter(string(c.file("requests").Data), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "!sleep "); ok {
			d, err := time.ParseDuration(rest)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", c.Path, line, err)
			}
			steps = append(steps, Step{Sleep: d})
			continue
		}
		if line != "" {
			steps = append(steps, Step{Line: line})
		}
	}
	return steps, nil
}

// Input is the requests as one byte stream (pauses left out).
func (c *Conversation) Input() ([]byte, error) {
	steps, err := c.Steps()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, s := range steps {
		if s.Sleep == 0 {
			b.WriteString(s.Line + "\n")
		}
	}
	return b.Bytes(), nil
}

// Want returns the normalised responses expected on transport, and
// whether the conversation runs there at all.
func (c *Conversation) Want(transport string) ([]string, bool) {
	f := c.file(transport)
	if f == nil {
		return nil, false
	}
	return Lines(f.Data), true
}

// Update replaces the responses of transport with got and rewrites the
// archive.
func (c *Conversation) Update(transport string, got []string) error {
	data := []byte(strings.Join(got, "\n") + "\n")
	if f := c.file(transport); f != nil {
		f.Data = data
	} else {
		c.archive.Files = append(c.archive.Files, txtar.File{Name: transport, Data: data})
	}
	return os.WriteFile(c.Path, txtar.Format(c.archive), 0o644)
}

// Lines splits output into normalised lines.
func Lines(out []byte) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			lines = append(lines, Normalize(l))
		}
	}
	return lines
}

var normalizers = []struct {
	re  *regexp.Regexp
	new string
}{
	{regexp.MustCompile(`\bs-[0-9a-f]{12}\b`), `s-*`},
	{regexp.MustCompile(`\bst-[0-9a-f]{16}\b`), `st-*`},
	{regexp.MustCompile(`\bx-[0-9a-f]{16}\b`), `x-*`},
	{regexp.MustCompile(`"(duration_ms|pid|memory_rss_bytes|goroutines|open_fds)":\d+`), `"$1":0`},
	{regexp.MustCompile(`"uptime_s":[0-9.e+-]+`), `"uptime_s":0`},
	{regexp.MustCompile(`"(created_at|last_used_at|started_at)":"[^"]*"`), `"$1":"T"`},
	{regexp.MustCompile(`"version":"[^"]*"`), `"version":"V"`},
	{regexp.MustCompile(`"mtime":"[^"]*"`), `"mtime":"T"`},
	// A conversation's scratch directory (mktemp -d /tmp/tmp.XXXXXXXXXX).
	{regexp.MustCompile(`/tmp/tmp\.[A-Za-z0-9]{10}\b`), `/tmp/D`},
}

// Normalize replaces what changes from run to run in a response line.
func Normalize(line string) string {
	for _, n := range normalizers {
		line = n.re.ReplaceAllString(line, n.new)
	}
	return line
}

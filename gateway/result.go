package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	headtail "github.com/trl-project/trl/internal/clip"
)

// Error codes a ToolResult carries besides trl's own (COMMAND_FAILED,
// COMMAND_TIMEOUT, SESSION_BUSY, LIMIT_EXCEEDED, SHUTTING_DOWN,
// INVALID_PARAMS, INTERNAL_ERROR).
const (
	codeToolNotFound = "TOOL_NOT_FOUND"
	codeConflict     = "IDEMPOTENCY_CONFLICT"
)

// toolResult is seed 000 §4.1's ToolResult. Output is set on success, and
// on a failed command so its output is not lost.
type toolResult struct {
	OK     bool       `json:"ok"`
	Output *string    `json:"output,omitempty"`
	Error  *toolError `json:"error,omitempty"`
}

type toolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// update is one entry of seed 000 §4.2's updates: output as it came, with
// when (RFC 3339 UTC, milliseconds) and from which stream.
type update struct {
	Delta  string `json:"delta"`
	At     string `json:"at"`
	Stream string `json:"stream"`
}

// wrapped is seed 000 §4.2's form with updates.
type wrapped struct {
	Updates []update   `json:"updates"`
	Result  toolResult `json:"result"`
}

func failure(code, format string, args ...any) toolResult {
	return toolResult{Error: &toolError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// encode marshals v as one line of JSON, leaving '<', '>' and '&' as they
// are (they are command output, not HTML).
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		fmt.Fprintf(&b, `{"ok":false,"error":{"code":"INTERNAL_ERROR","message":%q}}`+"\n", "encoding the result: "+err.Error())
	}
	return b.Bytes()
}

// timeFormat is the seed's "2026-02-14T12:00:00.000Z".
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// collector gathers a command's output: each stream head and tail within a
// budget for the result, and the chunks as they came for updates, merged
// per stream over short intervals and capped.
type collector struct {
	stdout, stderr outputClip
	interval       time.Duration // chunks of one stream closer than this merge

	updates     []update
	lastStart   time.Time // when the last update's first chunk came
	updateBytes int
	maxUpdates  int
	maxBytes    int
	first, last time.Time // first and last chunk
}

func newCollector(budget int, interval time.Duration) *collector {
	return &collector{
		stdout:     outputClip{headtail.Clip{Max: budget}},
		stderr:     outputClip{headtail.Clip{Max: budget}},
		interval:   interval,
		maxUpdates: 1000,
		maxBytes:   budget,
	}
}

// add records one chunk of output that arrived at at. lost counts bytes of
// the stream that were dropped before it (a reader that fell behind).
func (c *collector) add(stream, data string, lost int64, at time.Time) {
	cl := &c.stdout
	if stream == "stderr" {
		cl = &c.stderr
	}
	if lost > 0 {
		cl.skip(lost)
	}
	cl.write(data)
	if data == "" {
		return
	}
	if c.first.IsZero() {
		c.first = at
	}
	c.last = at
	n := len(c.updates)
	if n > 0 && c.updates[n-1].Stream == stream && at.Sub(c.lastStart) < c.interval {
		if c.updateBytes+len(data) <= c.maxBytes {
			c.updates[n-1].Delta += data
			c.updateBytes += len(data)
		}
		return
	}
	if n >= c.maxUpdates || c.updateBytes+len(data) > c.maxBytes {
		return
	}
	c.updates = append(c.updates, update{Delta: data, At: at.UTC().Format(timeFormat), Stream: stream})
	c.updateBytes += len(data)
	c.lastStart = at
}

// overTime reports whether the output came over a span worth reporting as
// updates rather than all at once.
func (c *collector) overTime() bool {
	return len(c.updates) >= 2 && c.last.Sub(c.first) >= c.interval
}

// output is stdout, then stderr, on a new line when stdout did not end one.
func (c *collector) output() string {
	out, errs := c.stdout.String(), c.stderr.String()
	if out != "" && errs != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out + errs
}

// body renders res, in the wrapped form with updates when the output came
// over time.
func (c *collector) body(res toolResult) []byte {
	if c.overTime() {
		return encode(wrapped{Updates: c.updates, Result: res})
	}
	return encode(res)
}

// outputClip is a stream's head and tail within a budget (package clip,
// the one clipper of the text front-ends), shown with the gateway's
// omission line.
type outputClip struct{ headtail.Clip }

func (c *outputClip) write(s string) { c.Write(s) }

// skip records n bytes that were lost.
func (c *outputClip) skip(n int64) { c.Skip(n) }

// String is the head and the tail, with a note of how many bytes were left
// out between them.
func (c *outputClip) String() string {
	return c.Cut().String(func(k headtail.Cut) string {
		return fmt.Sprintf("[... trl: %d bytes of output omitted ...]\n", k.Dropped)
	})
}

package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite mcpserver/testdata/*.golden with what the tools answer now")

// normalisers make the volatile parts of an answer stable: ids, times,
// durations, process ids.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bx-[0-9a-f]{16}\b`), "x-EXECID"},
	{regexp.MustCompile(`\bs-[0-9a-f]{8,}\b`), "s-SESSIONID"},
	{regexp.MustCompile(`\b\d+\.\d s\b`), "N.N s"},
	{regexp.MustCompile(`"(duration_ms|pid|uptime_s)": [0-9.]+`), `"$1": 0`},
	{regexp.MustCompile(`"(created_at|last_used_at|started_at|mtime)": "[^"]*"`), `"$1": "TIME"`},
	{regexp.MustCompile(`"progress": [0-9.]+`), `"progress": 0`},
}

// scratch is the file tools' directory, shown as /SCRATCH.
var scratch string

func normalise(s string) string {
	if scratch != "" {
		s = strings.ReplaceAll(s, scratch, "/SCRATCH")
	}
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// answer is one tool call and what the model got.
type answer struct {
	title string
	args  map[string]any
	text  string
	isErr bool
	data  string
}

func (a answer) String() string {
	var args strings.Builder
	enc := json.NewEncoder(&args)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(a.args)
	kind := "text"
	if a.isErr {
		kind = "error"
	}
	s := fmt.Sprintf("=== %s\n%s--- %s\n%s\n", a.title, args.String(), kind, a.text)
	if a.data != "" {
		s += "--- structured\n" + a.data + "\n"
	}
	return normalise(s)
}

// TestGolden pins, per tool, exactly the text (and structured content) a
// model gets, read through the SDK's own MCP client: a passing command, a
// failing one, a cut build log, a prompt, a yield, a shell exit, and
// every other tool's answer. `go test ./mcpserver -run TestGolden
// -update` rewrites testdata/*.golden.
func TestGolden(t *testing.T) {
	cs, _ := connect(t, nil)
	answers := map[string][]answer{}
	call := func(title, tool string, args map[string]any) answer {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err, "%s is never a protocol error", tool)
		a := answer{title: title, args: args, isErr: res.IsError}
		for _, c := range res.Content {
			a.text += c.(*mcp.TextContent).Text
		}
		if res.StructuredContent != nil {
			b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
			require.NoError(t, err)
			a.data = string(b)
		}
		answers[tool] = append(answers[tool], a)
		return a
	}
	data := func(a answer) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(a.data), &m), a.data)
		return m
	}

	call("a passing command", "run", map[string]any{"command": "cd /tmp && echo hello"})
	call("a failing command", "run", map[string]any{"command": "echo checking; echo 'no such file: config.yaml' >&2; false"})
	call("a cut build log", "run", map[string]any{"command": "seq -f 'compiling unit %g ... ok' 1 40000"})
	prompt := call("a prompt", "run", map[string]any{"command": "printf 'Continue? [y/N] '; read a; echo got=$a"})
	call("answering the prompt", "send_input", map[string]any{"exec_id": data(prompt)["exec_id"], "input": "y", "keys": []string{"Enter"}})
	call("nothing to type", "send_input", map[string]any{})
	yielded := call("a yield", "run", map[string]any{"command": "echo started; sleep 30", "yield_ms": 300})
	id := data(yielded)["exec_id"]
	call("still running", "wait", map[string]any{"exec_id": id, "timeout_ms": 200})
	call("interrupting it", "cancel", map[string]any{"exec_id": id})
	call("how it ended", "wait", map[string]any{"exec_id": id, "timeout_ms": 10000})
	call("nothing running", "cancel", map[string]any{})
	call("a signal that is none, nothing running", "cancel", map[string]any{"signal": "SIGFOO"})
	bySession := call("a second yield", "run", map[string]any{"command": "sleep 30", "yield_ms": 300})
	call("interrupting the session's command", "cancel", map[string]any{})
	call("waiting by session after the cancel", "wait", map[string]any{"session": "default", "timeout_ms": 10000})
	call("how that one ended", "wait", map[string]any{"exec_id": data(bySession)["exec_id"], "timeout_ms": 10000})
	call("nothing to wait for", "wait", map[string]any{})
	call("a shell exit", "run", map[string]any{"session": "doomed", "command": "exit 4"})
	call("the session it ended", "session_info", map[string]any{"session": "doomed"})
	call("a run after the shell exit", "run", map[string]any{"session": "doomed", "command": "pwd"})
	build := answers["run"][2]
	bid := data(build)["exec_id"]
	om := data(build)["stdout"].(map[string]any)["omitted"].(map[string]any)
	call("where the cut starts", "read_output", map[string]any{"exec_id": bid, "offset": om["offset"], "max_bytes": 64})
	kept := om["kept"].([]any)
	lostFrom := kept[0].(map[string]any)["offset"].(float64) + kept[0].(map[string]any)["bytes"].(float64)
	call("inside the lost part", "read_output", map[string]any{"exec_id": bid, "offset": lostFrom + 5, "max_bytes": 64})
	call("an unknown command", "read_output", map[string]any{"exec_id": "x-0000000000000000"})
	call("the default session's shell exits", "run", map[string]any{"command": "cd /usr; exit 4"})
	call("a run after the default shell's exit", "run", map[string]any{"command": "pwd"})
	call("a session named by an id that is gone", "run", map[string]any{"session": "s-0123456789ab", "command": "pwd"})

	call("a named session", "session_create", map[string]any{"name": "work", "shell": "/bin/sh", "working_dir": "/tmp"})
	call("a name in use", "session_create", map[string]any{"name": "work"})
	call("a fork of it", "session_fork", map[string]any{"session": "work", "name": "work-try"})
	call("a fork of no session", "session_fork", map[string]any{"session": "nope"})
	call("the sessions", "session_list", map[string]any{})
	call("an idle session", "session_info", map[string]any{"session": "work"})
	call("a new size", "resize", map[string]any{"session": "work", "rows": 10, "cols": 40})
	call("", "run", map[string]any{"session": "work", "command": "clear; printf 'hello screen'"})
	answers["run"] = answers["run"][:len(answers["run"])-1]
	call("after clear", "screen", map[string]any{"session": "work"})
	call("an unknown session", "screen", map[string]any{"session": "nope"})
	call("nothing in the background", "read_background", map[string]any{"session": "work"})
	call("", "run", map[string]any{"session": "work", "command": "(sleep 0.3; echo from-the-background) >/dev/tty &"})
	answers["run"] = answers["run"][:len(answers["run"])-1]
	require.Eventually(t, func() bool {
		a := call("", "read_background", map[string]any{"session": "work"})
		answers["read_background"] = answers["read_background"][:len(answers["read_background"])-1]
		return strings.Contains(a.text, "from-the-background")
	}, 10*time.Second, 100*time.Millisecond)
	call("what a background job printed", "read_background", map[string]any{"session": "work"})
	call("destroying it", "session_destroy", map[string]any{"session": "work"})
	call("an unknown session", "session_destroy", map[string]any{"session": "work"})

	// The file tools, on files in a scratch directory.
	scratch = t.TempDir()
	t.Cleanup(func() { scratch = "" })
	file := func(name, content string) string {
		p := filepath.Join(scratch, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		require.NoError(t, os.Chmod(p, 0o644))
		return p
	}
	small := file("src/hello.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n")
	var long strings.Builder
	for i := 1; i <= 1204; i++ {
		fmt.Fprintf(&long, "entry %d\n", i)
	}
	big := file("log.txt", long.String())
	bin := file("logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")
	require.NoError(t, os.Symlink("src/hello.go", filepath.Join(scratch, "main.go")))
	call("a text file", "read_file", map[string]any{"path": small})
	call("a paged file", "read_file", map[string]any{"path": big})
	call("its next page", "read_file", map[string]any{"path": big, "line_offset": 201, "line_limit": 3})
	call("its last page", "read_file", map[string]any{"path": big, "line_offset": 1202})
	call("past the end", "read_file", map[string]any{"path": big, "line_offset": 1300})
	call("a binary file", "read_file", map[string]any{"path": bin})
	call("a missing file", "read_file", map[string]any{"path": filepath.Join(scratch, "nope.txt")})
	call("a directory", "read_file", map[string]any{"path": scratch})
	w := call("a new file", "write_file", map[string]any{"path": filepath.Join(scratch, "notes/todo.md"), "content": "- write tests\n- ship\n"})
	call("over a version not seen", "write_file", map[string]any{"path": filepath.Join(scratch, "notes/todo.md"), "content": "x\n", "if_sha256": strings.Repeat("0", 64)})
	call("over the version seen", "write_file", map[string]any{"path": filepath.Join(scratch, "notes/todo.md"), "content": "- write tests\n- ship\n- rest\n", "if_sha256": data(w)["sha256"]})
	call("an edit", "edit_file", map[string]any{"path": small, "old_string": "\"hello\"", "new_string": "\"hello, world\""})
	call("an ambiguous edit", "edit_file", map[string]any{"path": big, "old_string": "entry 1", "new_string": "first"})
	call("every occurrence", "edit_file", map[string]any{"path": big, "old_string": "entry 44", "new_string": "ENTRY 44", "replace_all": true})
	call("text not there", "edit_file", map[string]any{"path": small, "old_string": "func Main", "new_string": "x"})
	call("a listing", "list_dir", map[string]any{"path": scratch, "depth": 2})
	call("a missing directory", "list_dir", map[string]any{"path": filepath.Join(scratch, "nope")})

	tools := make([]string, 0, len(answers))
	for tool := range answers {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	listed, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range listed.Tools {
		assert.Contains(t, tools, tool.Name, "every tool has a golden file")
	}
	for _, tool := range tools {
		var b strings.Builder
		for _, a := range answers[tool] {
			b.WriteString(a.String())
		}
		path := filepath.Join("testdata", tool+".golden")
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run with -update to write %s", path)
		assert.Equal(t, string(want), b.String(), "%s: the text a model gets changed (go test ./mcpserver -run TestGolden -update rewrites it)", path)
	}
}

package runtime

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSyntaxErrorsAsTyped: a shell's complaint about a command reads as
// it would for a line typed at its prompt, never naming trl's command file
// (issue 24 item 8).
func TestSyntaxErrorsAsTyped(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	for _, tc := range []struct{ shell, cmd, want string }{
		{"/bin/bash", "echo )", "bash: syntax error near unexpected token `)'\n"},
		{"/bin/bash", "echo ok; fi", "bash: syntax error near unexpected token `fi'\n"},
		{"/bin/bash", "echo 'open", "bash: unexpected EOF while looking for matching `''\n"},
		{"/bin/bash", "echo a\necho )", "bash: line 2: syntax error near unexpected token `)'\nbash: line 2: `echo )'\n"},
		{"/bin/bash", "cd /nonexistent-dir", "bash: cd: /nonexistent-dir: No such file or directory\n"},
		{"/bin/sh", "echo )", ""},
		{"zsh", "echo )", ""},
	} {
		sh := tc.shell
		if !strings.HasPrefix(sh, "/") {
			if p, err := exec.LookPath(sh); err == nil {
				sh = p
			} else {
				t.Logf("%s not installed: not checked", sh)
				continue
			}
		}
		id := mustCall(t, rt, "session.create", map[string]any{"shell": sh})["session_id"].(string)
		st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": tc.cmd})
		stderr := st["stderr"].(string)
		assert.NotContains(t, stderr, "trl-", "%s %q", filepath.Base(sh), tc.cmd)
		assert.NotContains(t, stderr, "/command", "%s %q", filepath.Base(sh), tc.cmd)
		assert.NotEqual(t, float64(0), st["exit_code"], "%s %q", filepath.Base(sh), tc.cmd)
		if tc.want != "" {
			assert.Equal(t, tc.want, stderr, "%s %q", filepath.Base(sh), tc.cmd)
		} else {
			assert.Contains(t, strings.ToLower(stderr), "error", "%s %q", filepath.Base(sh), tc.cmd)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmePath is the README whose examples these tests run as written.
const readmePath = "../../README.md"

// defaultSocket is the socket the README's examples use; the tests put
// their own daemon's socket in its place and change nothing else.
const defaultSocket = "/tmp/trl-default.sock"

var fenceRE = regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```")

// readmeBlocks returns the README's fenced code blocks of one language.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	var out []string
	for _, m := range fenceRE.FindAllStringSubmatch(string(b), -1) {
		if m[1] == lang {
			out = append(out, m[2])
		}
	}
	return out
}

// readmeBlock returns the one sh block of the README that contains marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	var found []string
	for _, b := range readmeBlocks(t, "sh") {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	require.Len(t, found, 1, "README.md should have exactly one sh example containing %q", marker)
	return found[0]
}

// TestReadmeSocatExample runs the README's socat example as written (only
// the socket path is this test's daemon's) and checks that the command's
// output comes back: before, the half-closed connection was taken for a
// client that left and the answer was an empty `"state": "running"`.
func TestReadmeSocatExample(t *testing.T) {
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("socat is not installed (apt-get install socat): the README's socat example cannot run here")
	}
	d := startDaemon(t)
	script := strings.ReplaceAll(readmeBlock(t, "socat"), defaultSocket, d.socket)
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).Output()
	require.NoError(t, err, "%s", out)
	var r struct {
		OK   bool `json:"ok"`
		Data struct {
			Stdout   string `json:"stdout"`
			ExitCode *int   `json:"exit_code"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	require.True(t, r.OK, "%s", out)
	uname, err := exec.Command("uname", "-a").Output()
	require.NoError(t, err)
	require.Equal(t, string(uname), r.Data.Stdout, "%s", out)
	require.NotNil(t, r.Data.ExitCode)
	require.Zero(t, *r.Data.ExitCode)
}

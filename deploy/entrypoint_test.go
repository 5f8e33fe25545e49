// Tests of the container's pieces that run without a container engine:
// the entrypoint's token file and the health check command.
package deploy

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestEntrypointReadsTheTokenFile starts trl through entrypoint.sh with the
// token only in a file (as a compose secret gives it), checks that HTTP
// takes that token, and that the image's health check command answers.
func TestEntrypointReadsTheTokenFile(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "trl"), "../cmd/trl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const token = "entrypoint-test-token-3b7f0c1d9e2a"
	tokenFile := filepath.Join(dir, "trl_token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "trl.sock")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRL_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "TRL_AUTH_TOKEN_FILE="+tokenFile)

	cmd := exec.Command("sh", "entrypoint.sh", "serve", "--socket", socket, "--http", "127.0.0.1:0")
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("trl exit: %v\n%s", err, stderr)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("trl did not stop on SIGTERM")
		}
	}()

	re := regexp.MustCompile(`"http":"([0-9.:]+)"`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("trl exited: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("trl did not listen:\n%s", stderr)
		}
	}
	post := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/rpc", strings.NewReader(`{"id":1,"method":"system.ping"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(token); code != http.StatusOK {
		t.Errorf("the token from the file got HTTP %d", code)
	}
	if code := post("wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token got HTTP %d", code)
	}
	// The Dockerfile's HEALTHCHECK, on this daemon's socket.
	hc := exec.Command(filepath.Join(dir, "trl"), "call", "--socket", socket, "system.ping")
	if out, err := hc.CombinedOutput(); err != nil {
		t.Errorf("trl call system.ping: %v\n%s", err, out)
	}
}

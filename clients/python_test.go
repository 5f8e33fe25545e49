package clients

import (
	"bytes"
	"context"
	"fmt"
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

// pythonTestToken is the bearer token of the daemon the tests start.
const pythonTestToken = "python-client-test-token-0123456789abcdef"

// python3 returns the interpreter's path, or skips when it is missing or
// older than the client supports.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python client's tests are skipped")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.version_info >= (3, 9), sys.version.split()[0])").Output()
	if err != nil {
		t.Skipf("python3 does not run (%v): the Python client's tests are skipped", err)
	}
	if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "True" {
		t.Skipf("python3 is %s; trl_client needs Python >= 3.9: its tests are skipped", strings.TrimSpace(string(out)))
	}
	return py
}

// buildTrl builds the daemon once per test binary.
var buildTrl = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "trl-clients-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "trl")
	cmd := exec.Command("go", "build", "-race", "-o", bin, "../cmd/trl")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ../cmd/trl: %v\n%s", err, out.String())
	}
	return bin, nil
})

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

var httpAddrRE = regexp.MustCompile(`"http":"([0-9.:\[\]]+)"`)

// startDaemon runs `trl serve` on a temporary socket and a loopback HTTP
// port; it returns the socket path and the HTTP URL, and stops the daemon
// (SIGTERM, expecting a clean exit) when the test ends.
func startDaemon(t *testing.T) (socket, url string) {
	t.Helper()
	bin, err := buildTrl()
	if err != nil {
		t.Fatal(err)
	}
	socket = filepath.Join(t.TempDir(), "trl.sock")
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "serve", "--socket", socket, "--http", "127.0.0.1:0", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "TRL_AUTH_TOKEN="+pythonTestToken)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon exit: %v\n%s", err, stderr)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("daemon did not stop on SIGTERM within 15 s")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := httpAddrRE.FindStringSubmatch(stderr.String()); m != nil {
			if _, err := os.Stat(socket); err == nil {
				return socket, "http://" + m[1]
			}
		}
		select {
		case err := <-done:
			t.Fatalf("daemon exited early: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not listen within 20 s:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPythonClient runs clients/python's unittest suite against the real
// daemon, over the socket and HTTP, sync and asyncio.
func TestPythonClient(t *testing.T) {
	py := python3(t)
	socket, url := startDaemon(t)
	// A hung test must fail here with its output, not at go test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = "python"
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+mustAbs(t, "python"),
		"PYTHONDONTWRITEBYTECODE=1",
		"TRL_SOCKET="+socket,
		"TRL_HTTP_URL="+url,
		"TRL_AUTH_TOKEN="+pythonTestToken,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", out)
	if ctx.Err() != nil {
		t.Fatalf("the Python client's tests did not finish within 5 minutes")
	}
	if err != nil {
		t.Fatalf("the Python client's tests failed: %v", err)
	}
	if !bytes.Contains(out, []byte("\nOK")) {
		t.Fatalf("unittest did not report OK")
	}
}

// TestPythonClientInstallsOffline installs the package with pip from the
// source directory with no index: the in-tree build backend needs nothing
// from the network.
func TestPythonClientInstallsOffline(t *testing.T) {
	py := python3(t)
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skip("pip is not available for python3: the offline install test is skipped")
	}
	target := t.TempDir()
	cmd := exec.Command(py, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check",
		"--target", target, mustAbs(t, "python"))
	cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1", "PIP_INDEX_URL=http://127.0.0.1:9/nothing")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install --no-index ./clients/python: %v\n%s", err, out)
	}
	check := exec.Command(py, "-c", "import trl_client, os; print(trl_client.__version__, os.path.dirname(trl_client.__file__))")
	check.Dir = t.TempDir()
	check.Env = append(os.Environ(), "PYTHONPATH="+target)
	out, err := check.CombinedOutput()
	if err != nil {
		t.Fatalf("importing the installed package: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), filepath.Join(target, "trl_client")) {
		t.Fatalf("imported trl_client from the wrong place: %s", out)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

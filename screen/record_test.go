package screen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The corpus: each case is a program run on a real PTY, its output
// recorded byte for byte (<name>.pty), then replayed into tmux, whose
// capture-pane is the expected screen (<name>.want.json). Regenerate with
//
//	go test ./screen -run TestGolden -record
//
// (needs tmux, vim, less, top and python3).

// step is one thing done to the recorded program: wait, then type or
// resize.
type step struct {
	wait   time.Duration
	input  string
	resize [2]int // rows, cols
}

type recCase struct {
	name  string
	argv  []string
	steps []step
}

// caseMeta is what replaying a case needs besides its bytes.
type caseMeta struct {
	Rows, Cols int
	// ResizeAt is the offset at which the terminal was resized to
	// ResizeRows×ResizeCols (0: never).
	ResizeAt               int `json:",omitempty"`
	ResizeRows, ResizeCols int `json:",omitempty"`
}

// want is tmux's view of the replayed bytes.
type want struct {
	Meta      caseMeta
	Lines     []string
	History   []string
	Cursor    Cursor
	AltScreen bool
	Title     string
}

const corpusDir = "../testdata/screens"

func recCases(dir string) []recCase {
	ms := 1 * time.Millisecond
	file := filepath.Join(dir, "poem.txt")
	return []recCase{
		{"vim", []string{"vim", "-u", "NONE", "-i", "NONE", "-N", "-n", file}, []step{
			{wait: 1200 * ms}, {input: "ggOhello from trl\x1b"}, {wait: 300 * ms, input: ":set nu\r"},
			{wait: 300 * ms, input: "5Gdd"}, {wait: 300 * ms, input: "Aé 日本\x1b"}, {wait: 800 * ms},
		}},
		{"vim-exit", []string{"sh", "-c", "echo before vim; vim -u NONE -i NONE -N -n " + file + "; echo after vim"}, []step{
			{wait: 1200 * ms}, {input: "3Gx"}, {wait: 300 * ms, input: ":q!\r"}, {wait: 800 * ms},
		}},
		{"less", []string{"less", filepath.Join(dir, "long.txt")}, []step{
			{wait: 800 * ms}, {input: " "}, {wait: 300 * ms, input: "/line 4\r"}, {wait: 800 * ms},
		}},
		{"top-batch", []string{"top", "-b", "-n1"}, []step{{wait: 2000 * ms}}},
		{"top", []string{"top", "-d", "10"}, []step{{wait: 2000 * ms}}},
		{"python", []string{"python3", "-q"}, []step{
			{wait: 800 * ms}, {input: "1+1\r"}, {wait: 200 * ms, input: "print('héllo wörld 日本')\r"},
			{wait: 200 * ms, input: "for i in range(3):\r"}, {wait: 200 * ms, input: "    print(i*'ab')\r"},
			{wait: 200 * ms, input: "\r"}, {wait: 200 * ms, input: "x = 'typo\x7f\x7f\x7f\x7fok'\r"},
			{wait: 200 * ms, input: "x\r"}, {wait: 800 * ms},
		}},
		{"progress", []string{"bash", filepath.Join(dir, "progress.sh")}, []step{{wait: 8000 * ms}}},
		{"wide", []string{"bash", filepath.Join(dir, "wide.sh")}, []step{{wait: 1000 * ms}}},
		{"bash", []string{"bash", "--norc", "--noprofile", "-i"}, []step{
			{wait: 800 * ms}, {input: "PS1='\\[\\e[1;34m\\]demo\\[\\e[0m\\]$ '\r"}, {wait: 200 * ms, input: "echo one two three\r"},
			{wait: 200 * ms, input: "\x1b[A\x1b[D\x1b[D\x1b[D\x1b[D\x1b[Dxx\r"}, {wait: 200 * ms, input: "printf '%s\\n' 日本語 ✓ é\r"},
			{wait: 200 * ms, input: "echo a long line that will wrap past the right margin of an eighty column terminal, yes\r"},
			{wait: 200 * ms, input: "for i in 1 2 3; do echo $i; done\r"}, {wait: 200 * ms, input: "ech\t"}, {wait: 300 * ms, input: " tab\x01# \r"},
			{wait: 200 * ms, input: "partial input\x17\x17line"}, {wait: 800 * ms},
		}},
		{"resize-text", []string{"bash", filepath.Join(dir, "resize.sh")}, []step{
			{wait: 1000 * ms}, {resize: [2]int{20, 50}}, {wait: 1500 * ms},
		}},
		{"resize-wider", []string{"bash", filepath.Join(dir, "resize.sh")}, []step{
			{wait: 1000 * ms}, {resize: [2]int{26, 120}}, {wait: 1500 * ms},
		}},
		{"resize-clear", []string{"bash", filepath.Join(dir, "resize-clear.sh")}, []step{
			{wait: 1000 * ms}, {resize: [2]int{24, 60}}, {wait: 1500 * ms},
		}},
		{"resize", []string{"top", "-d", "10"}, []step{
			{wait: 1500 * ms}, {resize: [2]int{30, 100}}, {wait: 1500 * ms},
		}},
	}
}

// record runs c on a 24×80 PTY and returns its output.
func record(t *testing.T, c recCase) ([]byte, caseMeta) {
	t.Helper()
	meta := caseMeta{Rows: 24, Cols: 80}
	cmd := osexec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PYTHONSTARTUP=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for _, s := range c.steps {
		time.Sleep(s.wait)
		if s.input != "" {
			// Typed a key at a time, as a person would.
			for _, r := range s.input {
				_, _ = f.Write([]byte(string(r)))
				time.Sleep(15 * time.Millisecond)
			}
		}
		if s.resize[0] > 0 {
			mu.Lock()
			meta.ResizeAt = out.Len()
			mu.Unlock()
			meta.ResizeRows, meta.ResizeCols = s.resize[0], s.resize[1]
			if err := pty.Setsize(f, &pty.Winsize{Rows: uint16(s.resize[0]), Cols: uint16(s.resize[1])}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = f.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return bytes.Clone(out.Bytes()), meta
}

// tmuxReplay feeds the bytes to a tmux pane of the recorded size through
// a raw terminal and captures what tmux shows.
func tmuxReplay(t *testing.T, name string, data []byte, meta caseMeta) want {
	t.Helper()
	dir := t.TempDir()
	p1, p2 := data, []byte(nil)
	if meta.ResizeAt > 0 {
		p1, p2 = data[:meta.ResizeAt], data[meta.ResizeAt:]
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "p1"), p1, 0o600))
	must(os.WriteFile(filepath.Join(dir, "p2"), p2, 0o600))
	sock := "trl-screen-" + strconv.Itoa(os.Getpid())
	tm := func(args ...string) string {
		out, err := osexec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	defer func() { _ = osexec.Command("tmux", "-L", sock, "kill-server").Run() }()
	script := fmt.Sprintf("cd %s; stty raw -echo; cat p1; touch d1; while [ ! -e go ]; do sleep 0.02; done; cat p2; touch d2; exec sleep 100000", dir)
	tm("new-session", "-d", "-s", name, "-x", strconv.Itoa(meta.Cols), "-y", strconv.Itoa(meta.Rows), "sh", "-c", script)
	tm("set", "-g", "history-limit", "1000")
	waitFile := func(p string) {
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				time.Sleep(500 * time.Millisecond) // let tmux read and draw the rest
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("tmux replay of %s never finished", name)
	}
	waitFile("d1")
	if meta.ResizeAt > 0 {
		tm("resize-window", "-t", name, "-x", strconv.Itoa(meta.ResizeCols), "-y", strconv.Itoa(meta.ResizeRows))
		time.Sleep(300 * time.Millisecond)
	}
	must(os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	waitFile("d2")
	var w want
	w.Meta = meta
	w.Lines = strings.Split(strings.TrimSuffix(tm("capture-pane", "-p", "-t", name), "\n"), "\n")
	info := strings.SplitN(strings.TrimSuffix(tm("display", "-p", "-t", name,
		"#{cursor_x}\t#{cursor_y}\t#{cursor_flag}\t#{alternate_on}\t#{history_size}\t#{pane_height}\t#{host}\t#{pane_title}"), "\n"), "\t", 8)
	w.Cursor.Col, _ = strconv.Atoi(info[0])
	w.Cursor.Row, _ = strconv.Atoi(info[1])
	w.Cursor.Visible = info[2] == "1"
	w.AltScreen = info[3] == "1"
	if hs, _ := strconv.Atoi(info[4]); hs > 0 && !w.AltScreen {
		w.History = strings.Split(strings.TrimSuffix(tm("capture-pane", "-p", "-t", name, "-S", "-", "-E", "-1"), "\n"), "\n")
	}
	if h, _ := strconv.Atoi(info[5]); h != len(w.Lines) {
		// capture-pane drops nothing; keep the check honest.
		t.Fatalf("%s: %d lines captured for a %d-row pane", name, len(w.Lines), h)
	}
	if info[7] != info[6] {
		w.Title = info[7]
	}
	return w
}

func writeCorpus(t *testing.T) {
	dir, err := filepath.Abs(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"tmux", "vim", "less", "top", "python3", "bash"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Fatalf("-record needs %s", tool)
		}
	}
	for _, c := range recCases(dir) {
		if *recordOnly != "" && c.name != *recordOnly {
			continue
		}
		data, meta := record(t, c)
		w := tmuxReplay(t, c.name, data, meta)
		var js bytes.Buffer
		enc := json.NewEncoder(&js)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(w); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.name+".pty"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.name+".want.json"), js.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s: %d bytes", c.name, len(data))
	}
}

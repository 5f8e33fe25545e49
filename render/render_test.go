package render

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "a\nb\n", "a\nb\n"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
		{"colors", "\x1b[1;31merror\x1b[0m: x\n", "error: x\n"},
		{"progress", "get  0%\rget 50%\rget 100%\n", "get 100%\n"},
		{"shorter redraw keeps the tail, as a terminal does", "abcdef\rxy\n", "xycdef\n"},
		{"erase to end", "abcdef\rxy\x1b[K\n", "xy\n"},
		{"backspace", "ab\bc\n", "ac\n"},
		{"spinner", "spin |\b/\b-\b\\\b*\n", "spin *\n"},
		{"backspace erase", "typo\b\x1b[K\b\x1b[Kok\n", "tyok\n"},
		{"title and osc dropped", "\x1b]0;title\x07hi\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "hilink\n"},
		{"status bar between save and restore", "unpacking\x1b7\x1b[24;0f\x1b[42mProgress: [ 20%]\x1b[49m\x1b8 done\n", "unpacking done\n"},
		{"column moves", "a\x1b[5Gb\x1b[2Dc\n", "a  cb\n"},
		{"unfinished line", "prompt$ ", "prompt$ "},
		{"wide and combining", "日本 e\u0301\n", "日本 e\u0301\n"},
		{"delete chars", "abcd\x1b[2D\x1b[1P\n", "abd\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Text([]byte(c.in)); got != c.want {
				t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// TestStreamMatchesText checks that feeding bytes a few at a time, with
// escape sequences and runes split across writes, gives what Text gives.
func TestStreamMatchesText(t *testing.T) {
	in := []byte("\x1b[32mok\x1b[0m 日本\rre\x1b[Kdrawn\nnext line 50%\rnext line 100%\npartial")
	want := Text(in)
	for _, chunk := range []int{1, 2, 3, 5} {
		r := New()
		var got []byte
		for b := in; len(b) > 0; {
			n := min(chunk, len(b))
			r.Write(b[:n])
			b = b[n:]
			got = append(got, r.Take()...)
		}
		got = append(got, r.Flush()...)
		if string(got) != want {
			t.Errorf("chunk %d: %q, want %q", chunk, got, want)
		}
	}
}

// TestCorpusProgress renders the recorded apt-style log of the screen
// corpus: each package's bar collapses to its last state.
func TestCorpusProgress(t *testing.T) {
	data, err := os.ReadFile("../testdata/screens/progress.pty")
	if err != nil {
		t.Fatal(err)
	}
	got := Text(data)
	for _, want := range []string{
		"Reading package lists... Done\n",
		"Get: libfoo1 [####################] 100%\n",
		"Progress: [100%] done\n",
		"spinner: *\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\r") || strings.Contains(got, " 50%") {
		t.Errorf("escapes or redraws left:\n%q", got)
	}
}

// AptLog builds an apt-style install log: per package a download line
// redrawn with \r as it progresses, dpkg's unpack and set-up lines, and the
// bottom-row "Progress: [ nn%]" bar drawn between cursor save and restore.
func AptLog(packages int) []byte {
	var b bytes.Buffer
	b.WriteString("Reading package lists... Done\r\nBuilding dependency tree... Done\r\n")
	// apt makes room for its bar with a newline, then goes back up
	// (apt-pkg/install-progress.cc, SetupTerminalScrollArea).
	b.WriteString("\n\x1b7\x1b[0;23r\x1b8\x1b[1A")
	for i := range packages {
		name := fmt.Sprintf("lib%c%c-data%d", 'a'+i%26, 'a'+i/26%26, i)
		for pct := 0; pct <= 100; pct += 2 {
			fmt.Fprintf(&b, "\r\x1b[K%d%% [%d %s %d kB/%d kB %d%%]", (i*100+pct)/packages, i+1, name, pct*12, 1200, pct)
		}
		fmt.Fprintf(&b, "\r\x1b[KGet:%d http://deb.example.org/debian stable/main amd64 %s all 1.%d [1,200 kB]\r\n", i+1, name, i)
	}
	for i := range packages {
		name := fmt.Sprintf("lib%c%c-data%d", 'a'+i%26, 'a'+i/26%26, i)
		fmt.Fprintf(&b, "Unpacking %s (1.%d) ...\r\n", name, i)
		fmt.Fprintf(&b, "\x1b7\x1b[24;0f\x1b[42m\x1b[30mProgress: [%3d%%]\x1b[49m\x1b[39m [%s%s] \x1b8",
			i*100/packages, strings.Repeat("#", i*40/packages), strings.Repeat(".", 40-i*40/packages))
		fmt.Fprintf(&b, "Setting up %s (1.%d) ...\r\n", name, i)
	}
	b.WriteString("\n\x1b7\x1b[0;24r\x1b8\x1b[1A\x1b[J")
	return b.Bytes()
}

func TestAptLogTenTimesSmaller(t *testing.T) {
	raw := AptLog(40)
	text := Text(raw)
	if ratio := float64(len(raw)) / float64(len(text)); ratio < 10 {
		t.Errorf("rendered %d bytes of %d raw: %.1fx smaller, want >= 10x", len(text), len(raw), ratio)
	}
	if strings.Contains(text, "Progress:") || strings.Contains(text, "kB/") {
		t.Errorf("progress drawing left in the rendered log:\n%s", text)
	}
	if !strings.Contains(text, "Setting up libnb-data39 (1.39) ...\n") {
		t.Errorf("log lines lost:\n%s", text)
	}
}

func BenchmarkText(b *testing.B) {
	raw := AptLog(40)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		_ = Text(raw)
	}
}

// TestTextAllocatesOnce: rendering a large plain output allocates about
// its size once (the daemon renders up to max_output_bytes, 64 MiB):
// before, the text grew by doubling and was copied into the string, about
// three times its size.
func TestTextAllocatesOnce(t *testing.T) {
	raw := bytes.Repeat([]byte("some text of an ordinary log line\n"), 1<<20/34*4) // ~4 MiB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := Text(raw)
	runtime.ReadMemStats(&after)
	if len(out) != len(raw) {
		t.Fatalf("rendered %d bytes of plain text as %d", len(raw), len(out))
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(len(raw))*3/2 {
		t.Errorf("rendering %d bytes allocated %d", len(raw), allocated)
	}
}

// TestRedrawnRows: rows redrawn after the cursor went up keep only their
// last state, as a person sees them (issue 24 item 5).
func TestRedrawnRows(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"two layers", "layer1: 0%\nlayer2: 0%\n\x1b[2A\x1b[2Klayer1: 100%\n\x1b[2Klayer2: 100%\n", "layer1: 100%\nlayer2: 100%\n"},
		{"docker pull", "Pulling fs layer\r\n" +
			"a1: Waiting\r\nb2: Waiting\r\nc3: Waiting\r\n" +
			"\x1b[3A\x1b[2K\ra1: Downloading [==>    ]\r\x1b[3B" +
			"\x1b[2A\x1b[2K\rb2: Downloading [=>     ]\r\x1b[2B" +
			"\x1b[3A\x1b[2K\ra1: Pull complete\r\x1b[3B" +
			"\x1b[2A\x1b[2K\rb2: Pull complete\r\x1b[2B" +
			"\x1b[1A\x1b[2K\rc3: Pull complete\r\x1b[1B" +
			"Digest: sha256:00\r\n",
			"Pulling fs layer\na1: Pull complete\nb2: Pull complete\nc3: Pull complete\nDigest: sha256:00\n"},
		{"npm gauge then erase below", "⸨░░░░░░⸩ ⠋ idealTree\x1b[0K\r⸨██░░░░⸩ ⠙ reify\x1b[0K\r\x1b[0K\nadded 3 packages\n", "\nadded 3 packages\n"},
		{"cargo status rows", "   Compiling a v0.1.0\n    Building [=>  ] 1/3: a\r\x1b[K   Compiling b v0.1.0\n    Building [==> ] 2/3: b\r\x1b[K    Finished dev\n", "   Compiling a v0.1.0\n   Compiling b v0.1.0\n    Finished dev\n"},
		{"previous line with F", "step 1\nstep 2\x1b[1F\x1b[Kstep 1 done\x1b[1E", "step 1 done\nstep 2"},
		{"reverse index", "a\nb\x1bM\rA\n", "A\nb"},
		{"up past the window's top stops there", "x\n\x1b[9Ay\n", "y\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Text([]byte(c.in)); got != c.want {
				t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// TestRedrawBeyondTheWindow: rows that left the window are final; a long
// log with redraws near its end keeps every line once.
func TestRedrawBeyondTheWindow(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString("\x1b[2A\x1b[2Kline 998 again\n\x1b[2Kline 999 again\n")
	got := Text([]byte(b.String()))
	if n := strings.Count(got, "\n"); n != 1000 {
		t.Errorf("%d lines, want 1000", n)
	}
	if !strings.HasPrefix(got, "line 0\nline 1\n") || !strings.HasSuffix(got, "line 997\nline 998 again\nline 999 again\n") {
		t.Errorf("rendered %q…%q", got[:20], got[len(got)-60:])
	}
}

func BenchmarkTextPlain(b *testing.B) {
	raw := bytes.Repeat([]byte("some text of an ordinary log line\n"), 1<<20/34*4)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		_ = Text(raw)
	}
}

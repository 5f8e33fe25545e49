package bench

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Screen is session.screen of an 80×24 screen a command drew, and the
// size of an apt-style install log with render "text" beside raw.
type Screen struct {
	SnapshotLatency *Stats  `json:"session_screen,omitempty"`
	AptRawBytes     int     `json:"apt_raw_bytes,omitempty"`
	AptTextBytes    int     `json:"apt_text_bytes,omitempty"`
	AptRatio        float64 `json:"apt_ratio,omitempty"`
	Error           string  `json:"error,omitempty"`
}

func (r *runner) screen() *Screen {
	out := &Screen{}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()
	// A full screen of coloured text, redrawn in place as top does.
	draw := `i=0; while [ $i -lt 30 ]; do printf '\033[3%dm%3d %s\033[0m\n' $((i%8)) $i 'the quick brown fox jumps over the lazy dog, 0123456789 abcdefghij'; i=$((i+1)); done; printf '\033[H\033[7mtop line\033[0m'`
	var res struct {
		ExitCode int `json:"exit_code"`
	}
	if err := c.Call("exec.run", map[string]any{"session_id": id, "command": draw}, &res); err != nil {
		out.Error = "draw: " + err.Error()
		return out
	}
	var snap struct {
		Lines []string `json:"lines"`
	}
	p := r.plan
	samples, err := sample(p.warm, p.latencyN, func() error {
		return c.Call("session.screen", map[string]any{"session_id": id}, &snap)
	})
	if err != nil {
		out.Error = "session.screen: " + err.Error()
		return out
	}
	if len(snap.Lines) != 24 || !strings.HasPrefix(snap.Lines[0], "top line") {
		out.Error = fmt.Sprintf("session.screen returned %d lines, first %q", len(snap.Lines), first(snap.Lines))
		return out
	}
	s := Summarize(samples)
	out.SnapshotLatency = &s

	f, err := os.CreateTemp("", "trl-bench-apt-*.log")
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer os.Remove(f.Name())
	_, err = f.Write(aptLog(60))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var raw, text struct {
		Stdout string `json:"stdout"`
	}
	if err := c.Call("exec.run", map[string]any{"session_id": id, "command": "cat " + f.Name()}, &raw); err != nil {
		out.Error = "exec.run raw: " + err.Error()
		return out
	}
	if err := c.Call("exec.run", map[string]any{"session_id": id, "command": "cat " + f.Name(), "render": "text"}, &text); err != nil {
		out.Error = "exec.run render text: " + err.Error()
		return out
	}
	out.AptRawBytes, out.AptTextBytes = len(raw.Stdout), len(text.Stdout)
	if out.AptTextBytes > 0 {
		out.AptRatio = float64(out.AptRawBytes) / float64(out.AptTextBytes)
	}
	return out
}

func first(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// aptLog is an apt-style install log: per package a download line redrawn
// with \r as it progresses, then dpkg's unpack and set-up lines with the
// bottom-row "Progress: [nn%]" bar drawn between cursor save and restore.
func aptLog(packages int) []byte {
	var b bytes.Buffer
	b.WriteString("Reading package lists... Done\nBuilding dependency tree... Done\n")
	// apt makes room for its bar with a newline, then goes back up
	// (apt-pkg/install-progress.cc, SetupTerminalScrollArea).
	b.WriteString("\n\x1b7\x1b[0;23r\x1b8\x1b[1A")
	for i := range packages {
		name := fmt.Sprintf("lib%c%c-data%d", 'a'+i%26, 'a'+i/26%26, i)
		for pct := 0; pct <= 100; pct += 2 {
			fmt.Fprintf(&b, "\r\x1b[K%d%% [%d %s %d kB/%d kB %d%%]", (i*100+pct)/packages, i+1, name, pct*12, 1200, pct)
		}
		fmt.Fprintf(&b, "\r\x1b[KGet:%d http://deb.example.org/debian stable/main amd64 %s all 1.%d [1,200 kB]\n", i+1, name, i)
	}
	for i := range packages {
		name := fmt.Sprintf("lib%c%c-data%d", 'a'+i%26, 'a'+i/26%26, i)
		fmt.Fprintf(&b, "Unpacking %s (1.%d) ...\n", name, i)
		fmt.Fprintf(&b, "\x1b7\x1b[24;0f\x1b[42m\x1b[30mProgress: [%3d%%]\x1b[49m\x1b[39m [%s%s] \x1b8",
			i*100/packages, strings.Repeat("#", i*40/packages), strings.Repeat(".", 40-i*40/packages))
		fmt.Fprintf(&b, "Setting up %s (1.%d) ...\n", name, i)
	}
	b.WriteString("\n\x1b7\x1b[0;24r\x1b8\x1b[1A\x1b[J")
	return b.Bytes()
}

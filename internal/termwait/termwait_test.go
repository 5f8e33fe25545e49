package termwait

import (
	"testing"
	"time"
)

const patience = 15 * time.Second

func TestReadLine(t *testing.T) {
	for _, sh := range []string{"sh", "bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			need(t, sh)
			p := start(t, sh, "-c", "echo ready; read x; echo got=$x")
			p.waitOutput("ready", patience)
			s := p.waitWaiting(patience)
			if s.Kind != KindLine || s.Confidence != ConfidenceKernel || s.Reader.Pid != p.cmd.Process.Pid {
				t.Fatalf("status %+v, want line from %d (kernel)", s, p.cmd.Process.Pid)
			}
			if !s.Modes.Canonical || !s.Modes.Echo || s.Modes.EOF != 0x04 || s.Modes.Erase != 0x7f {
				t.Fatalf("modes %+v", s.Modes)
			}
			p.write("hello\r")
			p.waitOutput("got=hello", patience)
			p.exited(patience)
		})
	}
}

func TestReadPrompt(t *testing.T) {
	need(t, "bash")
	p := start(t, "bash", "-c", "read -p 'Continue? [Y/n] ' a; echo answer=$a")
	p.waitOutput("Continue? [Y/n] ", patience)
	s := p.waitWaiting(patience)
	if s.Kind != KindLine || s.Reader.Comm != "bash" {
		t.Fatalf("status %+v", s)
	}
	p.write("y\r")
	p.waitOutput("answer=y", patience)
	p.exited(patience)
}

func TestPipelineMiddleReadsTerminal(t *testing.T) {
	need(t, "bash", "sh", "cat")
	p := start(t, "bash", "-c", `echo start | sh -c 'read a; read b </dev/tty; echo "$a/$b"' | cat; echo end`)
	s := p.waitWaiting(patience)
	if s.Kind != KindLine || s.Reader.Comm != "sh" || s.Reader.Pid == p.cmd.Process.Pid {
		t.Fatalf("status %+v, want the middle sh", s)
	}
	if s.Foreground != p.cmd.Process.Pid {
		t.Fatalf("foreground %d, want bash's group %d", s.Foreground, p.cmd.Process.Pid)
	}
	p.write("two\r")
	p.waitOutput("start/two", patience)
	p.exited(patience)
}

func TestPassword(t *testing.T) {
	need(t, "python3")
	p := start(t, "python3", "-c", "import getpass; print('pw=' + getpass.getpass())")
	p.waitOutput("Password:", patience)
	s := p.waitWaiting(patience)
	if s.Kind != KindPassword || s.Modes.Echo || !s.Modes.Canonical {
		t.Fatalf("status %+v, want password", s)
	}
	p.write("sesame\r")
	p.waitOutput("pw=sesame", patience)
	p.exited(patience)
}

func TestPythonREPL(t *testing.T) {
	need(t, "python3")
	p := start(t, "python3", "-i", "-q")
	p.waitOutput(">>> ", patience)
	for i, want := range []string{"2", "6", "12"} {
		s := p.waitWaiting(patience)
		if s.Kind != KindRaw && s.Kind != KindLine {
			t.Fatalf("round %d: status %+v", i, s)
		}
		if s.Reader.Pid != p.cmd.Process.Pid {
			t.Fatalf("round %d: reader %+v", i, s.Reader)
		}
		p.write("print(" + want + ")\r")
		p.waitOutput(want+"\r\n", patience)
	}
	p.write("exit()\r")
	p.exited(patience)
}

func TestLessIsTUI(t *testing.T) {
	need(t, "less")
	p := start(t, "sh", "-c", "seq 1 500 | less")
	s := p.waitTUI(patience)
	if s.Kind != KindTUI || s.Reader.Comm != "less" {
		t.Fatalf("status %+v, want tui from less (alt %v)", s, p.alt())
	}
	p.write("q")
	p.exited(patience)
}

func TestVimIsTUI(t *testing.T) {
	for _, vi := range []string{"vim", "vi"} {
		t.Run(vi, func(t *testing.T) {
			need(t, vi)
			p := start(t, vi, "-u", "NONE", "-N", "-n", "-i", "NONE")
			s := p.waitTUI(patience)
			if s.Kind != KindTUI || s.Modes.Canonical {
				t.Fatalf("status %+v, want tui (alt %v)", s, p.alt())
			}
			// Without the caller's alternate-screen knowledge it is raw.
			if s2, err := p.term.Check(false); err != nil || !s2.Waiting || s2.Kind != KindRaw {
				t.Fatalf("Check(false) = %+v, %v", s2, err)
			}
			p.write("\x1b:q!\r")
			p.exited(patience)
		})
	}
}

func TestNeverWaiting(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		argv  []string
		ready string
		watch time.Duration
	}{
		{"sleep", []string{"sleep"}, []string{"sh", "-c", "echo ready; sleep 5"}, "ready", 1500 * time.Millisecond},
		{"busy loop", []string{"sh"}, []string{"sh", "-c", "echo ready; while :; do :; done"}, "ready", 1500 * time.Millisecond},
		{"socket accept", []string{"python3"}, []string{"python3", "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print('ready', flush=True); s.accept()"}, "ready", 1500 * time.Millisecond},
		{"http.server", []string{"python3"}, []string{"python3", "-m", "http.server", "0", "--bind", "127.0.0.1"}, "Serving HTTP", 1500 * time.Millisecond},
		{"a line every 2 s", []string{"sh"}, []string{"sh", "-c", "echo ready; while :; do echo tick; sleep 2; done"}, "ready", 4500 * time.Millisecond},
		{"stdin from a fifo", []string{"cat", "mkfifo"}, nil, "ready", 1500 * time.Millisecond},
		{"stdin from a pipe", []string{"cat"}, []string{"sh", "-c", "echo ready; sleep 30 | cat"}, "ready", 1500 * time.Millisecond},
		{"terminal and a socket", []string{"python3"}, []string{"python3", "-c", "import socket,select,sys; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print('ready', flush=True); select.select([sys.stdin, s], [], [])"}, "ready", 1500 * time.Millisecond},
		{"waiting on a child", []string{"sh"}, []string{"sh", "-c", "echo ready; sh -c 'sleep 30'"}, "ready", 1500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			need(t, tc.tools...)
			argv := tc.argv
			if argv == nil {
				fifo := t.TempDir() + "/fifo"
				argv = []string{"sh", "-c", "mkfifo " + fifo + "; echo ready; cat < " + fifo}
			}
			p := start(t, argv...)
			p.waitOutput(tc.ready, patience)
			p.neverWaiting(tc.watch)
		})
	}
}

package screen

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	recordFlag = flag.Bool("record", false, "re-record testdata/screens from real programs and tmux")
	recordOnly = flag.String("record-case", "", "with -record, re-record only this case")
)

func loadCase(t testing.TB, name string) ([]byte, want) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name+".pty"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(corpusDir, name+".want.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w want
	if err := json.Unmarshal(js, &w); err != nil {
		t.Fatal(err)
	}
	return data, w
}

// replay feeds a case's bytes as the session would, in small writes, with
// the resize where it happened.
func replay(data []byte, m caseMeta, chunk int) *Screen {
	s := New(Options{Rows: m.Rows, Cols: m.Cols})
	feed := func(b []byte) {
		for len(b) > 0 {
			n := min(chunk, len(b))
			_, _ = s.Write(b[:n])
			b = b[n:]
		}
	}
	if m.ResizeAt > 0 {
		feed(data[:m.ResizeAt])
		s.Resize(m.ResizeRows, m.ResizeCols)
		feed(data[m.ResizeAt:])
	} else {
		feed(data)
	}
	return s
}

func TestGolden(t *testing.T) {
	if *recordFlag {
		writeCorpus(t)
	}
	names, err := filepath.Glob(filepath.Join(corpusDir, "*.want.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no corpus in %s: %v", corpusDir, err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(filepath.Base(n), ".want.json")
		t.Run(name, func(t *testing.T) {
			data, w := loadCase(t, name)
			for _, chunk := range []int{1 << 20, 7} {
				s := replay(data, w.Meta, chunk)
				got := s.Snapshot(SnapshotOptions{ScrollbackLines: len(w.History)})
				if got.AltScreen != w.AltScreen {
					t.Errorf("chunk %d: alt_screen %v, tmux %v", chunk, got.AltScreen, w.AltScreen)
				}
				lines := got.Lines[len(got.Lines)-got.Rows:]
				diffLines(t, "screen", lines, w.Lines)
				if !w.AltScreen {
					diffLines(t, "history", got.Lines[:len(got.Lines)-got.Rows], w.History)
				}
				if got.Cursor != w.Cursor {
					t.Errorf("chunk %d: cursor %+v, tmux %+v", chunk, got.Cursor, w.Cursor)
				}
				if w.Title != "" && got.Title != w.Title {
					t.Errorf("title %q, tmux %q", got.Title, w.Title)
				}
			}
		})
	}
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d lines, tmux %d", what, len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if bad++; bad <= 5 {
				t.Errorf("%s line %d:\n got  %q\n tmux %q", what, i, got[i], want[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d lines differ", what, bad)
	}
}

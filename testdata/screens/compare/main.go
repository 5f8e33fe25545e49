// Command compare measures terminal emulators against the tmux captures of
// the screen corpus (testdata/screens): for each case, does the library's
// visible screen text equal tmux's, line for line? It lives in its own
// module so the candidates never become dependencies of trl.
//
//	cd testdata/screens/compare && go run .
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hinshun/vt10x"
	"github.com/mattn/go-runewidth"
	"github.com/tonistiigi/vt100"
	"github.com/trl-project/trl/screen"
	"github.com/vito/midterm"
)

type want struct {
	Meta struct {
		Rows, Cols             int
		ResizeAt               int
		ResizeRows, ResizeCols int
	}
	Lines []string
}

// emulator is one candidate: write bytes, resize, read the rows.
type emulator struct {
	name string
	new  func(rows, cols int) (write func([]byte), resize func(rows, cols int), lines func() []string)
}

// fromRunes renders a rune grid: a wide rune's next cell is its second
// half, so it is skipped (the fairest reading of libraries that do not
// mark continuation cells).
func fromRunes(g [][]rune) []string {
	out := make([]string, len(g))
	for y, row := range g {
		var sb strings.Builder
		for x := 0; x < len(row); x++ {
			r := row[x]
			if r == 0 {
				r = ' '
			}
			sb.WriteRune(r)
			if runewidth.RuneWidth(r) == 2 && x+1 < len(row) && (row[x+1] == 0 || row[x+1] == ' ') {
				x++
			}
		}
		out[y] = strings.TrimRight(sb.String(), " ")
	}
	return out
}

var emulators = []emulator{
	{"trl screen (charmbracelet/x/ansi parser)", func(rows, cols int) (func([]byte), func(int, int), func() []string) {
		s := screen.New(screen.Options{Rows: rows, Cols: cols})
		return func(p []byte) { _, _ = s.Write(p) }, s.Resize, func() []string {
			return s.Snapshot(screen.SnapshotOptions{}).Lines
		}
	}},
	{"vito/midterm v0.2.4", func(rows, cols int) (func([]byte), func(int, int), func() []string) {
		t := midterm.NewTerminal(rows, cols)
		return func(p []byte) { _, _ = t.Write(p) }, t.Resize, func() []string { return fromRunes(t.Content) }
	}},
	{"hinshun/vt10x", func(rows, cols int) (func([]byte), func(int, int), func() []string) {
		t := vt10x.New(vt10x.WithSize(cols, rows))
		r, c := rows, cols
		return func(p []byte) { _, _ = t.Write(p) }, func(rr, cc int) { r, c = rr, cc; t.Resize(cc, rr) }, func() []string {
			g := make([][]rune, r)
			for y := range g {
				g[y] = make([]rune, c)
				for x := range g[y] {
					g[y][x] = t.Cell(x, y).Char
				}
			}
			return fromRunes(g)
		}
	}},
	{"tonistiigi/vt100", func(rows, cols int) (func([]byte), func(int, int), func() []string) {
		t := vt100.NewVT100(rows, cols)
		return func(p []byte) { _, _ = t.Write(p) }, t.Resize, func() []string { return fromRunes(t.Content) }
	}},
}

func main() {
	names, _ := filepath.Glob("../*.want.json")
	fmt.Printf("| emulator |")
	var cases []string
	for _, n := range names {
		c := strings.TrimSuffix(filepath.Base(n), ".want.json")
		cases = append(cases, c)
		fmt.Printf(" %s |", c)
	}
	fmt.Printf(" passed |\n|---|%s---|\n", strings.Repeat("---|", len(cases)))
	for _, e := range emulators {
		fmt.Printf("| %s |", e.name)
		pass := 0
		for _, c := range cases {
			ok := run(e, c)
			if ok {
				pass++
				fmt.Printf(" ok |")
			} else {
				fmt.Printf(" **differs** |")
			}
		}
		fmt.Printf(" %d/%d |\n", pass, len(cases))
	}
}

func run(e emulator, c string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // a panic is a failure too
		}
	}()
	data, err := os.ReadFile("../" + c + ".pty")
	if err != nil {
		panic(err)
	}
	js, err := os.ReadFile("../" + c + ".want.json")
	if err != nil {
		panic(err)
	}
	var w want
	if err := json.Unmarshal(js, &w); err != nil {
		panic(err)
	}
	write, resize, lines := e.new(w.Meta.Rows, w.Meta.Cols)
	if w.Meta.ResizeAt > 0 {
		write(data[:w.Meta.ResizeAt])
		resize(w.Meta.ResizeRows, w.Meta.ResizeCols)
		write(data[w.Meta.ResizeAt:])
	} else {
		write(data)
	}
	got := lines()
	if len(got) != len(w.Lines) {
		return false
	}
	for i := range got {
		if got[i] != w.Lines[i] {
			return false
		}
	}
	return true
}

module github.com/trl-project/trl/testdata/screens/compare

go 1.26.8

replace github.com/trl-project/trl => ../../..

require (
	github.com/hinshun/vt10x v0.0.0-20220301184237-5011da428d02
	github.com/mattn/go-runewidth v0.0.31
	github.com/tonistiigi/vt100 v0.0.0-20240514184818-90bafcd6abab
	github.com/trl-project/trl v0.0.0
	github.com/vito/midterm v0.2.4
)

require (
	github.com/aymanbagabas/go-osc52/v2 v2.0.1 // indirect
	github.com/charmbracelet/x/ansi v0.11.9 // indirect
	github.com/clipperhouse/displaywidth v0.11.0 // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/danielgatis/go-ansicode v1.0.7 // indirect
	github.com/danielgatis/go-iterator v0.0.1 // indirect
	github.com/danielgatis/go-utf8 v1.0.0 // indirect
	github.com/danielgatis/go-vte v1.0.8 // indirect
	github.com/lucasb-eyer/go-colorful v1.4.1 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/muesli/termenv v0.15.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

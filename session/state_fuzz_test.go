package session

import "testing"

// The state file is written by the session's shell, under --isolate by
// another uid: its parsers must fail, never panic or allocate without
// bound, whatever it holds.

func FuzzParseBashState(f *testing.F) {
	f.Add([]byte("X\x001\x00O\x00errexit\x00S\x00\x00o\x00errexit off\n\x00s\x00extglob on\n\x00C\x00/tmp\x00U\x000022\n\x00p\x00declare -- x=$'a\\nb'\ndeclare -A h=([k]=\"v\" )\n\x00F\x00declare -f f\n\x00B\x00f () \n{ \n    :\n}\n\x00l\x00ll\x00ls -l\x00d\x001\x00/tmp\x00t\x00\x00j\x00\x00E\x007\x00"))
	f.Add([]byte("d\x0099999999999\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		bashState{}.parse(b, "0123456789abcdef", "7")
	})
}

func FuzzParseZshState(f *testing.F) {
	f.Add([]byte("X\x00on\x00o\x002\x00errexit\x00off\x00C\x00/tmp\x00U\x00022\n\x00v\x00x\x00scalar\x00a\\0b\x00a\x00arr\x00array\x002\x00a\x00b\x00A\x00h\x00association\x002\x00k\x00v\x00f\x00g\x00\techo\x00l\x00ll\x00ls\x00g\x00\x00D\x000\x00t\x00\x00j\x00\x00E\x007\x00"))
	f.Add([]byte("a\x00x\x00array\x00-5\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		zshState{}.parse(b, "0123456789abcdef", "7")
	})
}

func FuzzParseShState(f *testing.F) {
	f.Add([]byte("C\x00/tmp\x00U\x000022\n\x00V\x00x='it'\"'\"'s'\n\x00P\x00export E='1'\n\x00R\x00readonly x\n\x00L\x00ll='ls -l'\n\x00O\x00set -o errexit\n\x00t\x00\x00j\x00\x00E\x007\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		shState{}.parse(b, "0123456789abcdef", "7")
	})
}

func FuzzParseDeclare(f *testing.F) {
	f.Add("declare -- x=$'a\\nb\\u00e9\\x7f\\cA'\ndeclare -a a=([0]=\"1\" [5]=$'q')\nlocal -\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseDeclare(s)
		shellLines(s)
	})
}

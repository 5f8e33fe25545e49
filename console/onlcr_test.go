package console

import "testing"

func TestOnlcr(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"plain":           "plain",
		"a\nb\n":          "a\r\nb\r\n",
		"a\r\nb":          "a\r\r\nb",
		"\x1b[1;2H\v\f":   "\x1b[1;2H\r\v\r\f",
		"漢字\n🚀":           "漢字\r\n🚀",
		"\n\n":            "\r\n\r\n",
		"\x1b]0;t\x07x\n": "\x1b]0;t\x07x\r\n",
	} {
		if got := string(onlcr([]byte("keep:"), []byte(in))); got != "keep:"+want {
			t.Errorf("onlcr(%q) = %q, want %q", in, got, "keep:"+want)
		}
	}
}

package lines

import (
	"bytes"
	"testing"
)

func TestStrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain\n", "plain\n"},
		{"", ""},
		{"\x1b[31mred\x1b[0m\n", "red\n"},
		{"a\x1b[1;38;5;200mb", "ab"},
		{"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
		{"clear\x1b[2J\x1b[H", "clear"},
		{"title\x1b]0;my title\x07 done", "title done"},
		{"link \x1b]8;;http://x\x1b\\text\x1b]8;;\x1b\\", "link text"},
		{"dcs\x1bPq#0;2;0;0;0\x1b\\end", "dcsend"},
		{"charset\x1b(Bok", "charsetok"},
		{"keypad\x1b=ok\x1b>", "keypadok"},
		{"lone\x1b", "lone"},
		{"esc\x1b\x1bx", "esc"},                       // ESC ESC: first drops alone, ESC x is a two-byte sequence
		{"bad csi\x1b[12\nnext\n", "bad csi\nnext\n"}, // cut short; the newline survives
		{"open osc\x1b]0;runaway\nnext\n", "open osc\nnext\n"},
		{"osc\x1b]0;t\x1b[31mred", "oscred"}, // ESC inside a string starts a new sequence
		{"utf8 \x1bé ok", "utf8 é ok"},       // ESC before a multibyte rune: drop ESC only
		{"héllo wörld\n", "héllo wörld\n"},
	} {
		if got := string(appendStripped(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("strip(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// In place, as finish does it.
		b := []byte(tc.in)
		if got := string(appendStripped(b[:0], b)); got != tc.want {
			t.Errorf("in-place strip(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzStrip(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb\n", "\x1b]0;x\x07", "\x1b", "x\x1bPy\x1b\\z\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := appendStripped(nil, in)
		if bytes.IndexByte(out, esc) >= 0 {
			t.Fatalf("ESC left in %q", out)
		}
		if bytes.Count(out, []byte("\n")) != bytes.Count(in, []byte("\n")) {
			t.Fatalf("newlines changed: %q -> %q", in, out)
		}
		if again := appendStripped(nil, out); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
		b := bytes.Clone(in)
		if inPlace := appendStripped(b[:0], b); !bytes.Equal(inPlace, out) {
			t.Fatalf("in place %q != %q", inPlace, out)
		}
	})
}

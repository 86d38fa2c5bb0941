package lines

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// styledOutput writes the same mix of styled and plain text to every
// destination in these tests.
func styledOutput(w *Writer) {
	w.Color(Red).Println("red")
	w.Bold().Color(Green).Printf("n=%d", 3)
	w.Color(Blue).Underline().Println("a", "b")
	w.Println("plain \x1b[1mbold\x1b[0m text")
	_, _ = w.Write([]byte("title\x1b]0;t\x07 set\n"))
}

const (
	plainOutput = "red\nn=3\na b\nplain bold text\ntitle set\n"
	// On a terminal, text passes through and styles are emitted; the
	// terminal's ONLCR turns \n into \r\n on the way to the master side.
	termColorOutput = "\x1b[31mred\x1b[0m\r\n" +
		"\x1b[1;32mn=3\x1b[0m\r\n" +
		"\x1b[4;34ma b\x1b[0m\r\n" +
		"plain \x1b[1mbold\x1b[0m text\r\n" +
		"title\x1b]0;t\x07 set\r\n"
	termNoColorOutput = "red\r\nn=3\r\na b\r\n" +
		"plain \x1b[1mbold\x1b[0m text\r\n" +
		"title\x1b]0;t\x07 set\r\n"
)

// onPTY writes styledOutput to the slave side of a new pseudo-terminal,
// without flushing (line mode must be on by default), and returns what the
// master side reads.
func onPTY(t *testing.T, want string, opts ...Option) string {
	t.Helper()
	ptmx, tty, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()

	got := make(chan []byte)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for len(all) < len(want) {
			n, err := ptmx.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- all
	}()

	w := NewWriter(tty, opts...)
	if !w.IsTerminal() {
		t.Fatal("a pty slave was not detected as a terminal")
	}
	styledOutput(w) // no Flush: line mode is the default on a terminal
	var b []byte
	waitFor(t, func() string { return "still reading the pty; was line mode off?" }, func() bool { return received(got, &b) })
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	return string(b)
}

func TestColorOnTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	if got := onPTY(t, termColorOutput); got != termColorOutput {
		t.Errorf("got  %q\nwant %q", got, termColorOutput)
	}
}

func TestNoColorOnTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	if got := onPTY(t, termNoColorOutput); got != termNoColorOutput {
		t.Errorf("got  %q\nwant %q", got, termNoColorOutput)
	}
}

func TestColorToPipe(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"default", nil, plainOutput},
		// Styles are still dropped; only escapes in the text survive.
		{"allow-escapes", []Option{AllowEscapes(true)}, "red\nn=3\na b\nplain \x1b[1mbold\x1b[0m text\ntitle\x1b]0;t\x07 set\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			w := NewWriter(pw, tc.opts...)
			if w.IsTerminal() {
				t.Fatal("a pipe was detected as a terminal")
			}
			styledOutput(w)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			got, err := io.ReadAll(pr)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestColorToFile(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	name := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f)
	styledOutput(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != plainOutput {
		t.Errorf("got  %q\nwant %q", got, plainOutput)
	}
	if bytes.IndexByte(got, esc) >= 0 {
		t.Error("escape sequence in file")
	}
}

func TestStyleSGR(t *testing.T) {
	for _, tc := range []struct {
		s    Style
		want string
	}{
		{Style{}.Color(Red), "\x1b[31m"},
		{Style{}.Bold(), "\x1b[1m"},
		{Style{}.Bold().Dim().Italic().Underline().Color(White), "\x1b[1;2;3;4;37m"},
		{Style{}.Color(Black).Color(Cyan), "\x1b[36m"},
	} {
		if got := string(tc.s.st.appendSGR(nil)); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.s.st, got, tc.want)
		}
	}
	if !(Style{}.Color(Color(99)).st.isZero()) {
		t.Error("an out-of-range Color is not treated as no color")
	}
}

// fdOnly hides the *os.File so that detection goes through the Fd method.
type fdOnly struct{ f *os.File }

func (w fdOnly) Write(p []byte) (int, error) { return w.f.Write(p) }
func (w fdOnly) Fd() uintptr                 { return w.f.Fd() }

func TestDetectTerminal(t *testing.T) {
	ptmx, tty, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if !isTerminal(tty) || !isTerminal(fdOnly{tty}) {
		t.Error("pty slave not detected as a terminal")
	}
	name := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(fdOnly{f}) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file or buffer detected as a terminal")
	}
	if NewWriter(&bytes.Buffer{}).lineMode || !NewWriter(tty).lineMode || NewWriter(tty, LineMode(false)).lineMode {
		t.Error("line mode default does not follow terminal detection, or LineMode does not override it")
	}
}

func TestForceColor(t *testing.T) {
	t.Run("on-to-a-buffer", func(t *testing.T) {
		t.Setenv("NO_COLOR", "1") // a flag such as --color=always wins over it
		var b bytes.Buffer
		w := NewWriter(&b, ForceColor(true))
		styledOutput(w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// As on a terminal, without the terminal's \r.
		want := strings.ReplaceAll(termColorOutput, "\r\n", "\n")
		if b.String() != want {
			t.Errorf("got  %q\nwant %q", b.String(), want)
		}
	})
	t.Run("off-on-a-terminal", func(t *testing.T) {
		t.Setenv("NO_COLOR", "")
		if got := onPTY(t, termNoColorOutput, ForceColor(false)); got != termNoColorOutput {
			t.Errorf("got  %q\nwant %q", got, termNoColorOutput)
		}
	})
}

func TestSegment(t *testing.T) {
	var colored, plain bytes.Buffer
	for _, tc := range []struct {
		w    *Writer
		buf  *bytes.Buffer
		want string
	}{
		{NewWriter(&colored, ForceColor(true)), &colored,
			"\x1b[1;31mERROR\x1b[0m disk full\n[\x1b[32mok   \x1b[0m] 3 files\n"},
		{NewWriter(&plain), &plain, "ERROR disk full\n[ok   ] 3 files\n"},
	} {
		level := tc.w.Color(Red).Bold().Segment("ERROR")
		tc.w.Println(level, "disk full")
		tc.w.Printf("[%-5v] %d files", tc.w.Color(Green).Segment("ok"), 3) // the width pads the text alone
		if err := tc.w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := tc.buf.String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
		if level.String() != "ERROR" {
			t.Errorf("String() = %q", level.String())
		}
	}
}

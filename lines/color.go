package lines

import (
	"fmt"
	"io"
	"strconv"
)

// A Color is a foreground color for styled output. The zero Color means
// "no color".
type Color uint8

// The eight standard ANSI terminal colors. Their values are the SGR codes
// that select them, so emitting one needs no table.
const (
	Black Color = 30 + iota
	Red
	Green
	Yellow
	Blue
	Magenta
	Cyan
	White
)

// sgrReset ends a styled line.
const sgrReset = "\x1b[0m"

// Attribute bits of a style; each is an SGR code.
const (
	attrBold      = 1 << iota // SGR 1
	attrDim                   // SGR 2
	attrItalic                // SGR 3
	attrUnderline             // SGR 4
)

// style is the part of a Style that says how the text looks.
type style struct {
	fg    Color
	attrs uint8
}

func (s style) isZero() bool { return s == style{} }

// appendSGR appends the Select Graphic Rendition sequence for s.
func (s style) appendSGR(b []byte) []byte {
	b = append(b, esc, '[')
	sep := false
	for i := range 4 {
		if s.attrs&(1<<i) != 0 {
			if sep {
				b = append(b, ';')
			}
			b = append(b, byte('1'+i))
			sep = true
		}
	}
	if s.fg >= Black && s.fg <= White {
		if sep {
			b = append(b, ';')
		}
		b = strconv.AppendUint(b, uint64(s.fg), 10)
	}
	return append(b, 'm')
}

// A Style is a lightweight styled view of a Writer, returned by
// Writer.Color and Writer.Bold and refined by its own methods. It is a small
// value: make one per call site or per line, as convenient. Its Println and
// Printf behave as the Writer's, but wrap each call's text in ANSI SGR
// sequences when the Writer is a terminal and NO_COLOR is unset or empty;
// otherwise the styling is dropped silently and the text is written plain.
type Style struct {
	w  *Writer
	st style
}

// Color returns a view of w that writes in color c.
func (w *Writer) Color(c Color) Style { return Style{w: w}.Color(c) }

// Bold returns a view of w that writes in bold.
func (w *Writer) Bold() Style { return Style{w: w, st: style{attrs: attrBold}} }

// Color returns s with foreground color c. A value that is not one of the
// Color constants means no color.
func (s Style) Color(c Color) Style {
	if c < Black || c > White {
		c = 0
	}
	s.st.fg = c
	return s
}

// Bold returns s with bold text.
func (s Style) Bold() Style { s.st.attrs |= attrBold; return s }

// Dim returns s with faint text.
func (s Style) Dim() Style { s.st.attrs |= attrDim; return s }

// Italic returns s with italic text.
func (s Style) Italic() Style { s.st.attrs |= attrItalic; return s }

// Underline returns s with underlined text.
func (s Style) Underline() Style { s.st.attrs |= attrUnderline; return s }

// Println is Writer.Println in style s.
func (s Style) Println(a ...any) { s.w.println(s.st, a) }

// Printf is Writer.Printf in style s.
func (s Style) Printf(format string, a ...any) { s.w.printf(s.st, format, a) }

// A Segment is text in a style for one part of a line, such as a level tag,
// made by Style.Segment. Printed by a Writer's Println or Printf (%v or %s,
// with any width and flags), it is wrapped in the style's SGR sequences when
// the Writer that made it emits styles, and is plain text otherwise. The
// sequence after it resets every style: put segments in plain lines, not in
// lines printed through a Style.
type Segment struct {
	s    Style
	text string
}

// Segment formats its operands as fmt.Sprint does into a segment in style s.
func (s Style) Segment(a ...any) Segment { return Segment{s: s, text: fmt.Sprint(a...)} }

// String returns the segment's text, without any style.
func (g Segment) String() string { return g.text }

// Format implements fmt.Formatter. The verb, width and flags apply to the
// text alone, so that %-7v pads a tag to seven visible columns.
func (g Segment) Format(f fmt.State, verb rune) {
	text := fmt.Sprintf(fmt.FormatString(f, verb), g.text)
	if g.s.w == nil || !g.s.w.color || g.s.st.isZero() {
		io.WriteString(f, text)
		return
	}
	b := g.s.st.appendSGR(make([]byte, 0, len(text)+16))
	b = append(b, text...)
	f.Write(append(b, sgrReset...))
}

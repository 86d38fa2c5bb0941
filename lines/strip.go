package lines

import "bytes"

// esc starts every escape sequence.
const esc = 0x1b

// appendStripped appends src to dst with escape sequences removed, and
// returns the extended slice. dst may be src[:0]: the output never runs
// ahead of the input, so stripping in place is safe.
//
// Recognised, following ECMA-48:
//   - CSI: ESC [ parameter and intermediate bytes (0x20–0x3F) final (0x40–0x7E)
//   - OSC, DCS, SOS, PM, APC strings: ESC ] P X ^ or _ … ended by BEL or ESC \
//   - other sequences: ESC, intermediates (0x20–0x2F), final (0x30–0x7E)
//
// A sequence is cut short by any byte it cannot contain; that byte is kept.
// Strings are also cut short by a newline, so that a stray ESC ] can never
// swallow the line structure the package exists to protect. A lone ESC is
// dropped. Eight-bit C1 controls are left alone: in UTF-8 text those bytes
// are continuation bytes.
func appendStripped(dst, src []byte) []byte {
	for len(src) > 0 {
		i := bytes.IndexByte(src, esc)
		if i < 0 {
			return append(dst, src...)
		}
		dst = append(dst, src[:i]...)
		src = src[i+escLen(src[i:]):]
	}
	return dst
}

// escLen returns how many bytes of s, which starts with ESC, to drop.
func escLen(s []byte) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		k := 2
		for k < len(s) && s[k] >= 0x20 && s[k] <= 0x3f {
			k++
		}
		if k < len(s) && s[k] >= 0x40 && s[k] <= 0x7e {
			return k + 1
		}
		return k
	case ']', 'P', 'X', '^', '_':
		for k := 2; k < len(s); k++ {
			switch s[k] {
			case 0x07: // BEL, the common OSC terminator
				return k + 1
			case esc:
				if k+1 < len(s) && s[k+1] == '\\' { // ST
					return k + 2
				}
				return k // a new sequence starts here
			case '\n':
				return k
			}
		}
		return len(s)
	default:
		k := 1
		for k < len(s) && s[k] >= 0x20 && s[k] <= 0x2f {
			k++
		}
		if k < len(s) && s[k] >= 0x30 && s[k] <= 0x7e {
			return k + 1
		}
		return k
	}
}

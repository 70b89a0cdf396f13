package config

import (
	"bytes"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// The tokens of fastparse.go's subset, scanned as hclsyntax's scanner
// (scan_tokens.rl) scans them and filtered as its peeker filters them.
// Anything outside the subset, or any byte the scanner might count or
// classify differently (non-ASCII, carriage returns, control
// characters), stops the fast parse; hclsyntax then parses the input.

type fastKind uint8

const (
	fastEOF fastKind = iota
	fastNewline
	fastIdent
	fastNumber
	fastString // a whole quoted string without template sequences
	fastOBrace
	fastCBrace
	fastOBrack
	fastCBrack
	fastComma
	fastEqual
	fastColon
	fastDot
)

// fastCursor is a place in the input: its offset and the line it is on.
// lineStart is the offset of that line's column 1 (negative on the first
// line when the input starts past column 1).
type fastCursor struct {
	off, line, lineStart int
}

// fastTok holds no pointers and no ranges: the parser copies tokens on
// every peek and read, and builds a token's hcl.Range only when the AST
// keeps it (fastLexer.rng).
type fastTok struct {
	kind fastKind
	// escaped: a fastString whose value differs from its source (an
	// escape); crossedNL: scanned without newlines, it skipped one, so a
	// scan with newlines would have stopped there.
	escaped, crossedNL bool
	start, end         int // offsets of the token's bytes
	line, lineStart    int // the line the token starts on, as in fastCursor
}

// after is the cursor past t: a newline token ends at the start of the
// next line.
func (t *fastTok) after() fastCursor {
	if t.kind == fastNewline {
		return fastCursor{off: t.end, line: t.line + 1, lineStart: t.end}
	}
	return fastCursor{off: t.end, line: t.line, lineStart: t.lineStart}
}

// fastStop is the panic that ends a fast parse; fastParseConfig turns it
// into "not handled".
type fastStop struct{}

func fastFail() { panic(fastStop{}) }

type fastLexer struct {
	src      []byte
	str      string // src, converted once: names and values are cut from it without allocating
	filename string
	base     int // start.Byte: the offset of src in its file
}

func (l *fastLexer) pos(line, lineStart, off int) hcl.Pos {
	return hcl.Pos{Line: line, Column: off - lineStart + 1, Byte: l.base + off}
}

// rng is the token's range as hcl's token has it.
func (l *fastLexer) rng(t fastTok) hcl.Range {
	end := hcl.Pos{Line: t.line, Column: t.end - t.lineStart + 1, Byte: l.base + t.end}
	if t.kind == fastNewline {
		end = hcl.Pos{Line: t.line + 1, Column: 1, Byte: l.base + t.end}
	}
	return hcl.Range{Filename: l.filename, Start: l.pos(t.line, t.lineStart, t.start), End: end}
}

// inner is the range of a fastString's characters between its quotes.
func (l *fastLexer) inner(t fastTok) hcl.Range {
	return hcl.Range{Filename: l.filename, Start: l.pos(t.line, t.lineStart, t.start+1), End: l.pos(t.line, t.lineStart, t.end-1)}
}

// strVal is a fastString's value with its escapes resolved; quoted has
// checked them.
func (l *fastLexer) strVal(t fastTok) string {
	if !t.escaped {
		return l.str[t.start+1 : t.end-1]
	}
	src := l.src[t.start+1 : t.end-1]
	buf := make([]byte, 0, len(src))
	for i := 0; i < len(src); i++ {
		b := src[i]
		if b == '\\' {
			i++
			switch b = src[i]; b {
			case 'n':
				b = '\n'
			case 'r':
				b = '\r'
			case 't':
				b = '\t'
			}
		}
		buf = append(buf, b)
	}
	return string(buf)
}

// fastByteOK says whether b is a byte whose column hclsyntax counts as
// one and that it never folds into a multi-byte sequence: printable
// ASCII, a tab, a newline.
func fastByteOK(b byte) bool {
	return b >= 0x20 && b < 0x7f || b == '\t' || b == '\n'
}

// scan sets *t to the token at c, as hclsyntax's peeker would: with nl
// (newlines significant) a newline and a line comment that ends in one
// are a newline token; without, both are skipped. Block comments are
// always skipped, as the peeker skips them.
func (l *fastLexer) scan(c fastCursor, nl bool, t *fastTok) {
	src := l.src
	crossed := false
	for {
		if c.off >= len(src) {
			*t = fastTok{kind: fastEOF, crossedNL: crossed, start: c.off, end: c.off, line: c.line, lineStart: c.lineStart}
			return
		}
		switch ch := src[c.off]; {
		case ch == ' ' || ch == '\t':
			c.off++
		case ch == '\n':
			if nl {
				*t = fastTok{kind: fastNewline, start: c.off, end: c.off + 1, line: c.line, lineStart: c.lineStart}
				return
			}
			crossed = true
			c = fastCursor{off: c.off + 1, line: c.line + 1, lineStart: c.off + 1}
		case ch == '#' || ch == '/' && c.off+1 < len(src) && src[c.off+1] == '/':
			i := bytes.IndexByte(src[c.off:], '\n')
			if i < 0 { // a comment that ends the input is no newline
				c.off = len(src)
				continue
			}
			if nl {
				// The peeker gives a comment's whole range to the
				// newline it stands for.
				*t = fastTok{kind: fastNewline, start: c.off, end: c.off + i + 1, line: c.line, lineStart: c.lineStart}
				return
			}
			crossed = true
			end := c.off + i + 1
			c = fastCursor{off: end, line: c.line + 1, lineStart: end}
		case ch == '/' && c.off+1 < len(src) && src[c.off+1] == '*':
			i := bytes.Index(src[c.off+2:], []byte("*/"))
			if i < 0 {
				fastFail()
			}
			end := c.off + 2 + i + 2
			for j := c.off; j < end; j++ {
				if src[j] == '\n' {
					c.line++
					c.lineStart = j + 1
				}
			}
			c.off = end
		default:
			kind, end, escaped := l.lexeme(c.off)
			*t = fastTok{kind: kind, escaped: escaped, crossedNL: crossed, start: c.off, end: end, line: c.line, lineStart: c.lineStart}
			return
		}
	}
}

func fastIdentStart(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' }

func fastDigit(b byte) bool { return b >= '0' && b <= '9' }

// lexeme is the kind and end of the token that starts at i, and for a
// string whether an escape makes its value differ from its source.
func (l *fastLexer) lexeme(i int) (kind fastKind, end int, escaped bool) {
	src := l.src
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch ch := src[i]; {
	case fastIdentStart(ch):
		j := i + 1
		for j < len(src) && (fastIdentStart(src[j]) || fastDigit(src[j]) || src[j] == '-') {
			j++
		}
		return fastIdent, j, false
	case fastDigit(ch):
		// Only digits with an optional fraction: hcl's number token also
		// takes exponents and runs of dots, so whatever follows must be
		// nothing it could take.
		j := i + 1
		for j < len(src) && fastDigit(src[j]) {
			j++
		}
		if j+1 < len(src) && src[j] == '.' && fastDigit(src[j+1]) {
			j += 2
			for j < len(src) && fastDigit(src[j]) {
				j++
			}
		}
		if j < len(src) && (src[j] == '.' || fastIdentStart(src[j]) || fastDigit(src[j])) {
			fastFail()
		}
		return fastNumber, j, false
	case ch == '"':
		end, escaped := l.quoted(i)
		return fastString, end, escaped
	case ch == '{':
		return fastOBrace, i + 1, false
	case ch == '}':
		return fastCBrace, i + 1, false
	case ch == '[':
		return fastOBrack, i + 1, false
	case ch == ']':
		return fastCBrack, i + 1, false
	case ch == ',':
		return fastComma, i + 1, false
	case ch == '=' && next != '=' && next != '>': // not == or =>
		return fastEqual, i + 1, false
	case ch == ':' && next != ':': // not ::
		return fastColon, i + 1, false
	case ch == '.' && next != '.': // not ...
		return fastDot, i + 1, false
	}
	fastFail()
	return 0, 0, false
}

// quoted scans a quoted string on one line with no template sequence
// ("${", "%{", which "$${" and "%%{" contain) and no escape but \n \r \t
// \" \\.
func (l *fastLexer) quoted(open int) (end int, escaped bool) {
	src := l.src
	for i := open + 1; i < len(src); i++ {
		switch src[i] {
		case '"':
			return i + 1, escaped
		case '\n':
			fastFail()
		case '$', '%':
			if i+1 < len(src) && src[i+1] == '{' {
				fastFail()
			}
		case '\\':
			if i+1 >= len(src) {
				fastFail()
			}
			switch src[i+1] {
			case 'n', 'r', 't', '"', '\\':
			default:
				fastFail()
			}
			escaped = true
			i++
		}
	}
	fastFail()
	return 0, false
}

// fastPlausible looks over src once, without building anything, for what
// fastParse would give up on only after building part of a body: an
// operator, a call, a template sequence, an index. fastParse gives up on
// all of these too; the look only spares the work, so that a piece with
// one conditional costs little more than hcl's parse of it. It may pass
// what fastParse declines (it does not know "for" or legacy indexes) but
// never turns away what fastParse takes; FuzzFastParse checks that.
func fastPlausible(src []byte) bool {
	last := byte('\n') // the last byte of code that is no space
	for i := 0; i < len(src); i++ {
		b := src[i]
		if fastIdentStart(b) || fastDigit(b) { // most bytes
			last = b
			continue
		}
		if !fastByteOK(b) {
			return false
		}
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		switch b {
		case ' ', '\t':
			continue
		case '"':
			var ok bool
			if i, ok = fastPlausibleString(src, i+1); !ok {
				return false
			}
			if i == len(src) { // unclosed: fastParse declines it
				return true
			}
			last = b
			continue
		case '#':
			var ok bool
			if i, ok = fastPlausibleLineComment(src, i+1); !ok {
				return false
			}
			if i < len(src) {
				last = '\n'
			}
			continue
		case '/':
			switch next {
			case '/':
				var ok bool
				if i, ok = fastPlausibleLineComment(src, i+2); !ok {
					return false
				}
				if i < len(src) {
					last = '\n'
				}
			case '*':
				var ok bool
				if i, ok = fastPlausibleBlockComment(src, i+2); !ok {
					return false
				}
			default:
				return false
			}
			continue
		case '[': // an index, unless it starts a value
			if fastIdentStart(last) || fastDigit(last) || strings.IndexByte("-]}\"", last) >= 0 {
				return false
			}
		case '-': // only inside a name
			if i == 0 || !(fastIdentStart(src[i-1]) || fastDigit(src[i-1]) || src[i-1] == '-') {
				return false
			}
		case '=':
			if next == '=' || next == '>' {
				return false
			}
		case ':':
			if next == ':' {
				return false
			}
		case '(', ')', '?', '!', '+', '*', '<', '>', '&', '|', '~', '^', ';', '\'', '`', '$', '%', '@', '\\':
			return false
		}
		last = b
	}
	return true
}

// fastPlausibleString looks over a quoted string's characters from i to
// its closing quote, whose offset it returns (len(src) if there is
// none); not ok if fastParse would decline them.
func fastPlausibleString(src []byte, i int) (int, bool) {
	for ; i < len(src); i++ {
		switch b := src[i]; b {
		case '"':
			return i, true
		case '\n':
			return i, false
		case '\\':
			if i+1 == len(src) {
				return i, false
			}
			switch src[i+1] {
			case 'n', 'r', 't', '"', '\\':
				i++
			default:
				return i, false
			}
		case '$', '%':
			if i+1 < len(src) && src[i+1] == '{' {
				return i, false
			}
		default:
			if !fastByteOK(b) {
				return i, false
			}
		}
	}
	return i, true
}

// fastPlausibleLineComment is the offset of the newline that ends the
// comment from i (len(src) if none), and whether its bytes are fastByteOK.
func fastPlausibleLineComment(src []byte, i int) (int, bool) {
	for ; i < len(src) && src[i] != '\n'; i++ {
		if !fastByteOK(src[i]) {
			return i, false
		}
	}
	return i, true
}

// fastPlausibleBlockComment is the offset of the "/" that ends the
// comment from i (len(src) if none), and whether its bytes are fastByteOK.
func fastPlausibleBlockComment(src []byte, i int) (int, bool) {
	for ; i < len(src); i++ {
		b := src[i]
		if !fastByteOK(b) {
			return i, false
		}
		if b == '*' && i+1 < len(src) && src[i+1] == '/' {
			return i + 1, true
		}
	}
	return i, true
}

package state

import "encoding/json"

// reader is a cursor over one JSON document. The first thing it does not
// understand sets bad and moves the cursor to the end, so every loop stops
// and the result is thrown away.
type reader struct {
	b        []byte
	i        int
	bad      bool
	interned *interner
	// list collects the elements of one array before they are copied to a
	// slice of the right size.
	list []string
}

func (r *reader) fail() {
	r.bad = true
	r.i = len(r.b)
}

// peek skips whitespace and returns the next byte, failing at the end.
func (r *reader) peek() byte {
	for r.i < len(r.b) {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c
		}
	}
	r.fail()
	return 0
}

// end checks that nothing but whitespace follows the document.
func (r *reader) end() {
	if r.bad {
		return
	}
	for ; r.i < len(r.b); r.i++ {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
		default:
			r.fail()
			return
		}
	}
}

// null consumes a null literal if one is next. encoding/json leaves the
// (fresh) destination at its zero value for null, or nils it, which is the
// same here.
func (r *reader) null() bool {
	if r.peek() != 'n' {
		return false
	}
	if len(r.b)-r.i < 4 || string(r.b[r.i:r.i+4]) != "null" {
		r.fail()
		return false
	}
	r.i += 4
	return true
}

// object calls field with each key of an object (or of none, for null),
// quotes included and not unescaped, the cursor on the key's value; field
// must consume the value. Struct fields are matched on these bytes, so an
// escaped or differently-cased key is unknown here and left to
// encoding/json.
func (r *reader) object(field func(key []byte)) {
	if r.null() {
		return
	}
	if r.peek() != '{' {
		r.fail()
		return
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return
	}
	for !r.bad {
		key := r.rawString()
		if r.peek() != ':' {
			r.fail()
			return
		}
		r.i++
		field(key)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail()
		}
	}
}

// rawString returns the next string token, quotes included, without
// unescaping it.
func (r *reader) rawString() []byte {
	if r.peek() != '"' {
		r.fail()
		return []byte(`""`)
	}
	start := r.i
	for j := start + 1; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			r.i = j + 1
			return r.b[start : j+1]
		case c == '\\':
			j++ // skip the escaped byte, which may be a quote
		case c < 0x20:
			r.fail() // not allowed unescaped in JSON
			return []byte(`""`)
		}
	}
	r.fail()
	return []byte(`""`)
}

// str decodes a string, or null as "".
func (r *reader) str() string {
	if r.null() {
		return ""
	}
	return r.unquote(r.rawString())
}

// name decodes a string that many records repeat, such as a service name.
func (r *reader) name() string {
	if r.null() {
		return ""
	}
	return r.intern(r.rawString())
}

// intern is unquote through names.
func (r *reader) intern(raw []byte) string {
	if r.interned == nil || r.bad {
		return r.unquote(raw)
	}
	if s, ok := r.interned.seen[string(raw)]; ok {
		return s
	}
	s := r.unquote(raw)
	if !r.bad {
		r.interned.seen[string(raw)] = s
	}
	return s
}

// interner maps string tokens, quotes included, to their decoded value.
type interner struct{ seen map[string]string }

func newInterner() *interner { return &interner{seen: map[string]string{}} }

// unquote decodes a string token. Strings with escapes or non-ASCII bytes
// go through encoding/json, so invalid UTF-8 and surrogates come out
// exactly as it would make them.
func (r *reader) unquote(raw []byte) string {
	if r.bad {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= 0x80 {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				r.fail()
			}
			return s
		}
	}
	return string(inner)
}

// int decodes a plain integer: what encoding/json puts in an int field
// without complaint. Fractions and exponents are left to encoding/json.
func (r *reader) int() int {
	if r.null() || r.bad {
		return 0
	}
	neg := r.b[r.i] == '-'
	if neg {
		r.i++
	}
	start := r.i
	n := uint64(0)
	for ; r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9'; r.i++ {
		if n > (1<<63)/10 {
			r.fail()
			return 0
		}
		n = n*10 + uint64(r.b[r.i]-'0')
	}
	digits := r.i - start
	switch {
	case digits == 0, digits > 1 && r.b[start] == '0':
		r.fail()
		return 0
	case r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E'):
		r.fail()
		return 0
	case neg && n > 1<<63, !neg && n > 1<<63-1:
		r.fail()
		return 0
	}
	if neg {
		return int(-n)
	}
	return int(n)
}

func (r *reader) bool() bool {
	if r.null() {
		return false
	}
	rest := r.b[r.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		r.i += 4
		return true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		r.i += 5
		return false
	}
	r.fail()
	return false
}

// strs decodes an array of strings: nil for null, non-nil when empty, as
// encoding/json does.
func (r *reader) strs() []string { return r.array((*reader).str) }

// names is strs for arrays of names.
func (r *reader) names() []string { return r.array((*reader).name) }

func (r *reader) array(elem func(*reader) string) []string {
	if r.null() {
		return nil
	}
	if r.peek() != '[' {
		r.fail()
		return nil
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return []string{}
	}
	r.list = r.list[:0]
	for !r.bad {
		r.list = append(r.list, elem(r))
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return append([]string(nil), r.list...)
		default:
			r.fail()
		}
	}
	return nil
}

func (r *reader) strsMap() map[string][]string {
	if r.null() {
		return nil
	}
	out := map[string][]string{}
	r.object(func(key []byte) {
		k := r.intern(key)
		if _, dup := out[k]; dup {
			r.fail()
			return
		}
		out[k] = r.names()
	})
	return out
}

func (r *reader) strMap() map[string]string {
	if r.null() {
		return nil
	}
	out := map[string]string{}
	r.object(func(key []byte) {
		k := r.intern(key)
		if _, dup := out[k]; dup {
			r.fail()
			return
		}
		out[k] = r.str()
	})
	return out
}

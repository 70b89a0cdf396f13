package state

import (
	"encoding/json"
	"time"
)

// decodeCurrent decodes a record stored at the current schema version
// without reflection: encoding/json spends ~40µs on each record, which for
// a state of 1,000 sandboxes is most of a plan's time.
//
// It accepts only what decodeStrict would accept and decode to an equal
// Record: JSON as encodeRecord writes it, in any field order and spacing,
// with null anywhere a value may be. Anything else (a duplicate, unknown or
// differently-cased key, another schema version, a number that is not a
// plain integer, trailing data, a type mismatch) makes ok false, and the
// caller decodes with encoding/json, which says what is wrong. A field
// added to Record and not taught here is therefore slow, never lost.
//
// names, when not nil, is shared by the records of one read so that the
// names every record repeats (services, features, hosts) are allocated once.
func decodeCurrent(data []byte, names *interner) (rec *Record, ok bool) {
	r := &reader{b: data, interned: names}
	rec = new(Record)
	version, seen := 0, false
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "schema_version":
			fields.once(r, 0)
			version, seen = r.int(), true
		case "address":
			fields.once(r, 1)
			rec.Address = r.str()
		case "project":
			fields.once(r, 2)
			rec.Project = r.name()
		case "on_demand":
			fields.once(r, 3)
			rec.OnDemand = r.bool()
		case "services":
			fields.once(r, 4)
			rec.Services = r.names()
		case "features":
			fields.once(r, 5)
			rec.Features = r.strsMap()
		case "available_extensions":
			fields.once(r, 6)
			rec.AvailableExtensions = r.strsMap()
		case "credentials":
			fields.once(r, 7)
			rec.Credentials = r.credentialsMap()
		case "resources":
			fields.once(r, 8)
			rec.Resources = r.resources()
		case "created_at":
			fields.once(r, 9)
			rec.CreatedAt = r.time()
		case "expires_at":
			fields.once(r, 10)
			rec.ExpiresAt = r.time()
		case "generation":
			fields.once(r, 11)
			rec.Generation = r.int()
		default:
			r.fail()
		}
	})
	r.end()
	if r.bad || !seen || version != SchemaVersion {
		return nil, false
	}
	return rec, true
}

func (r *reader) credentialsMap() map[string]Credentials {
	if r.null() {
		return nil
	}
	out := map[string]Credentials{}
	r.object(func(key []byte) {
		svc := r.intern(key)
		if _, dup := out[svc]; dup {
			r.fail()
			return
		}
		out[svc] = r.credentials()
	})
	return out
}

func (r *reader) credentials() Credentials {
	var c Credentials
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "host":
			fields.once(r, 0)
			c.Host = r.name()
		case "port":
			fields.once(r, 1)
			c.Port = r.int()
		case "user":
			fields.once(r, 2)
			c.User = r.name()
		case "password":
			fields.once(r, 3)
			c.Password = Secret(r.str())
		case "database":
			fields.once(r, 4)
			c.Database = r.name()
		case "admin_user":
			fields.once(r, 5)
			c.AdminUser = r.name()
		case "admin_password":
			fields.once(r, 6)
			c.AdminPassword = Secret(r.str())
		default:
			r.fail()
		}
	})
	return c
}

func (r *reader) resources() Resources {
	var res Resources
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "network":
			fields.once(r, 0)
			res.Network = r.str()
		case "containers":
			fields.once(r, 1)
			res.Containers = r.strMap()
		case "volumes":
			fields.once(r, 2)
			res.Volumes = r.strs()
		default:
			r.fail()
		}
	})
	return res
}

// time decodes a timestamp with time.Time's own UnmarshalJSON, as
// encoding/json does.
func (r *reader) time() time.Time {
	var t time.Time
	if r.null() {
		return t
	}
	raw := r.rawString()
	if !r.bad && t.UnmarshalJSON(raw) != nil {
		r.fail()
	}
	return t
}

// bitset tracks which fields of one object have been seen, to refuse
// duplicates (encoding/json would silently keep the last, or merge maps).
type bitset uint32

func (s *bitset) once(r *reader, bit uint) {
	if *s&(1<<bit) != 0 {
		r.fail()
	}
	*s |= 1 << bit
}

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

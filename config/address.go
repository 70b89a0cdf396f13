package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Address names one sandbox instance: sandbox.NAME, or sandbox.NAME["KEY"]
// for instances of a for_each or on-demand block.
type Address struct {
	Name   string
	Key    string
	HasKey bool
}

// String renders the canonical form used in state, plans and the CLI.
func (a Address) String() string {
	if !a.HasKey {
		return "sandbox." + a.Name
	}
	return "sandbox." + a.Name + "[" + strconv.Quote(a.Key) + "]"
}

// Block is the address of the sandbox block the instance comes from.
func (a Address) Block() Address { return Address{Name: a.Name} }

// ParseAddress accepts sandbox.NAME, sandbox.NAME["KEY"] and, for
// convenience on a shell, sandbox.NAME[KEY] without quotes.
func ParseAddress(s string) (Address, error) {
	rest, ok := strings.CutPrefix(s, "sandbox.")
	if !ok {
		return Address{}, fmt.Errorf("invalid address %s: must start with \"sandbox.\"", quote(s))
	}
	name, key, hasKey := rest, "", false
	if i := strings.IndexByte(rest, '['); i >= 0 {
		if !strings.HasSuffix(rest, "]") {
			return Address{}, fmt.Errorf("invalid address %s: unterminated index", quote(s))
		}
		name, key, hasKey = rest[:i], rest[i+1:len(rest)-1], true
		if strings.HasPrefix(key, "'") {
			return Address{}, fmt.Errorf("invalid address %s: quote the key with double quotes, as in sandbox.NAME[\"KEY\"]", quote(s))
		}
		if strings.HasPrefix(key, `"`) {
			unq, err := strconv.Unquote(key)
			if err != nil {
				return Address{}, fmt.Errorf("invalid address %s: bad quoted key", quote(s))
			}
			key = unq
		}
		if key == "" {
			return Address{}, fmt.Errorf("invalid address %s: empty key", quote(s))
		}
	}
	if !validName(name) {
		return Address{}, fmt.Errorf("invalid address %s: %s is not a valid sandbox name", quote(s), quote(name))
	}
	return Address{Name: name, Key: key, HasKey: hasKey}, nil
}

// validName accepts HCL identifiers: a letter or underscore, then letters,
// digits, underscores and dashes.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && (r == '-' || (r >= '0' && r <= '9')):
		default:
			return false
		}
	}
	return true
}

// Package shellquote quotes words for a POSIX shell. It keeps no state
// and does no I/O.
package shellquote

import "strings"

// Quote wraps s in single quotes, every single quote inside it closed,
// escaped and reopened: one word to sh whatever s holds, newlines too.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

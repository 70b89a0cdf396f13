package redis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/sandboxer/sandboxer/state"
)

// ACLFileName is the ACL file inside secretDir.
const ACLFileName = "users.acl"

// AppACL is what the handed-out user may do: everything except the @admin
// and @dangerous categories (MODULE, CONFIG, DEBUG, ACL, SHUTDOWN, MONITOR,
// REPLICAOF, CLIENT KILL, …), with the few @dangerous commands that test
// suites and client libraries use on their own data added back. Module
// commands inherit categories from their flags (FT.CREATE is @write,
// FT.SEARCH @read), so they stay allowed; FT.CONFIG is @admin and does not.
const AppACL = "~* &* +@all -@admin -@dangerous +flushdb +flushall +keys +info +sort"

// ACLFile renders the users: the default user is switched off with no
// password (so no unauthenticated access, and protected mode has nothing to
// guard), sandboxer's admin may do anything, the app user gets AppACL.
// Passwords are stored as SHA-256 hashes (#…), so the file in the
// container holds no clear text.
func ACLFile(c state.Credentials) []byte {
	var b bytes.Buffer
	fmt.Fprintln(&b, "user default off resetpass resetkeys resetchannels -@all")
	fmt.Fprintf(&b, "user %s on #%s ~* &* +@all\n", c.AdminUser, sha256Hex(c.AdminPassword.Reveal()))
	fmt.Fprintf(&b, "user %s on #%s %s\n", c.User, sha256Hex(c.Password.Reveal()), AppACL)
	return b.Bytes()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// RestrictModuleCommands denies user the administrative and debug
// commands of the loaded modules. On Redis 7.0 module commands belong to no
// ACL category, so "-@admin -@dangerous" does not reach them, and the ACL
// file cannot name them (an unknown command there aborts start-up when the
// module is not loaded). Denied: commands flagged admin, *.CONFIG and
// *.DEBUG (FT.CONFIG, FT.DEBUG, JSON.DEBUG), and internal "_"-prefixed
// ones. It returns what it denied, sorted.
func RestrictModuleCommands(ctx context.Context, rdb *redis.Client, user string, modules []string) ([]string, error) {
	if len(modules) == 0 {
		return nil, nil
	}
	var deny []string
	for _, m := range modules {
		names, err := rdb.Do(ctx, "COMMAND", "LIST", "FILTERBY", "MODULE", m).StringSlice()
		if err != nil {
			return nil, fmt.Errorf("list commands of module %s: %w", m, err)
		}
		flags, err := CommandFlags(ctx, rdb, names)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if slices.Contains(flags[name], "admin") || denyByName(name) {
				deny = append(deny, strings.ToLower(name))
			}
		}
	}
	if len(deny) == 0 {
		return nil, nil
	}
	slices.Sort(deny)
	args := []any{"ACL", "SETUSER", user}
	for _, name := range deny {
		args = append(args, "-"+name)
	}
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		return nil, fmt.Errorf("deny module commands %v to %s: %w", deny, user, err)
	}
	return deny, nil
}

func denyByName(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasPrefix(n, "_") || strings.HasSuffix(n, ".CONFIG") || strings.HasSuffix(n, ".DEBUG")
}

// CommandFlags reads COMMAND INFO for names and returns each command's
// flags (the third element of its entry), lower-cased, by the given name.
func CommandFlags(ctx context.Context, rdb *redis.Client, names []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(names) == 0 {
		return out, nil
	}
	args := []any{"COMMAND", "INFO"}
	for _, n := range names {
		args = append(args, n)
	}
	info, err := rdb.Do(ctx, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("COMMAND INFO: %w", err)
	}
	for i, e := range info {
		entry, ok := e.([]any)
		if !ok || len(entry) < 3 || i >= len(names) {
			continue
		}
		fl, _ := entry[2].([]any)
		for _, f := range fl {
			if s, ok := f.(string); ok {
				out[names[i]] = append(out[names[i]], strings.ToLower(s))
			}
		}
	}
	return out, nil
}

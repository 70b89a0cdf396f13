package config

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// DefaultDatabase is the PostgreSQL database a sandbox's role owns unless
// the project or sandbox names another.
const DefaultDatabase = "app"

// databasePattern is a database name that needs no quoting anywhere a
// framework may put it (SQL, URLs, shell, Django's "test_" + NAME): what
// PostgreSQL folds an unquoted identifier to, within its 63-byte limit.
var databasePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reservedDatabases exist in every cluster and belong to the admin.
var reservedDatabases = []string{"postgres", "template0", "template1"}

// CheckDatabase reports why name cannot be a sandbox's database, or nil.
func CheckDatabase(name string) error {
	if !databasePattern.MatchString(name) {
		return fmt.Errorf("%q is not a usable database name: use 1 to 63 lowercase letters, digits and underscores, starting with a letter or underscore", name)
	}
	if slices.Contains(reservedDatabases, name) {
		return fmt.Errorf("%q is reserved (postgres, template0 and template1 exist in every cluster and belong to the admin)", name)
	}
	return nil
}

// envPrefixPattern is a prefix that keeps every variable name a portable
// shell identifier: <PREFIX><SERVICE>_URL.
var envPrefixPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// CheckEnvPrefix reports why prefix cannot start exported variable names,
// or nil. The CLI and the HTTP API check their prefix with it too.
func CheckEnvPrefix(prefix string) error {
	if !envPrefixPattern.MatchString(prefix) {
		return fmt.Errorf("%q is not a usable variable prefix: use 1 to 64 letters, digits and underscores, starting with a letter or underscore (for example ROBOCO_TEST_)", prefix)
	}
	return nil
}

// stringAttr evaluates an optional string attribute in sc; ok is false when
// it is absent, null or has errors.
func (l *loader) stringAttr(content *hcl.BodyContent, name string, sc scope) (s string, rng hcl.Range, ok bool, diags hcl.Diagnostics) {
	attr, present := content.Attributes[name]
	if !present {
		return "", hcl.Range{}, false, nil
	}
	v, diags := l.ev.eval(attr.Expr, sc)
	sv, ok, more := typed(v, attr.Expr, cty.String, name)
	diags = append(diags, more...)
	if !ok || sv.IsNull() {
		return "", attr.Expr.Range(), false, diags
	}
	return sv.AsString(), attr.Expr.Range(), true, diags
}

// frameworkSettings are the arguments shared by project and sandbox blocks
// that shape what a sandbox hands out rather than what it runs.
type frameworkSettings struct {
	Database  string // "" when not set here
	EnvPrefix string // "" when not set here
}

// decodeFrameworkSettings reads database and env_prefix. services are the
// project's opted-in services (nil when unknown, which skips the check that
// a database name has a postgres to live in); owner names the block.
func (l *loader) decodeFrameworkSettings(content *hcl.BodyContent, sc scope, services []string, owner string) (frameworkSettings, hcl.Diagnostics) {
	var fw frameworkSettings
	db, rng, ok, diags := l.stringAttr(content, "database", sc)
	if ok {
		switch err := CheckDatabase(db); {
		case err != nil:
			diags = append(diags, errorDiag("Invalid database name", upperFirst(err.Error())+".", rng))
		case services != nil && !slices.Contains(services, "postgres"):
			diags = append(diags, errorDiag("Database name without postgres",
				fmt.Sprintf("%s names a database, but its project does not opt in postgres. Remove database, or add \"postgres\" to the project's services.", owner), rng))
		default:
			fw.Database = db
		}
	}
	prefix, rng, ok, more := l.stringAttr(content, "env_prefix", sc)
	diags = append(diags, more...)
	if ok {
		if err := CheckEnvPrefix(prefix); err != nil {
			diags = append(diags, errorDiag("Invalid env_prefix", upperFirst(err.Error())+".", rng))
		} else {
			fw.EnvPrefix = prefix
		}
	}
	return fw, diags
}

// or returns the first non-empty string.
func or(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

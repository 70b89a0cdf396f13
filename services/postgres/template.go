package postgres

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sandboxer/sandboxer/internal/shellquote"
	"github.com/sandboxer/sandboxer/state"
)

// Template data directories (issue 31). The first sandbox of an image,
// a set of initialisation settings and a set of features has the image's
// own entrypoint initialise a data directory once, in a throwaway
// container, with the init script a sandbox started from scratch runs
// (TemplateInitScript: the app role, the extensions, the app database);
// every later sandbox starts from a copy of it, so initdb, the init
// script, the entrypoint's temporary server and its restart run once
// instead of once per sandbox.
//
// The template holds no usable credential: the app role is made without
// a password, and the admin (POSTGRES_USER), made with a throwaway one,
// loses it (TemplateRevokeSQL) before the entrypoint stops the temporary
// server, so no TCP login to a copy can succeed until a sandbox has set
// its own. A sandbox sets both passwords (TemplateSessions) in
// PostgreSQL's single-user mode on its copy, run by TemplateStartScript
// before the image's entrypoint starts the server: nothing listens on any
// socket until every password is the sandbox's.
const (
	// TemplateMount is where a template volume is mounted, in the
	// container that builds it (read-write) and in sandboxes (read-only).
	TemplateMount = "/sbx-template"
	// TemplateData is the template's data directory (the builder's PGDATA).
	TemplateData = TemplateMount + "/data"
	// TemplateMarker, in the template's data directory, holds the
	// template's key. The builder writes it last, after the temporary
	// server has stopped cleanly; a copy without it is never started.
	TemplateMarker = "sandboxer-template.ok"
	// TemplateInitName, TemplateRevokeName and TemplateFinishName are the
	// builder's init files: they sort after every image's own scripts and
	// in this order, bytewise and in a locale's collation.
	TemplateInitName   = "sandboxer-0-init.sql"
	TemplateRevokeName = "sandboxer-1-revoke.sql"
	TemplateFinishName = "sandboxer-2-finish.sh"
	// TemplateDamaged is the exit code of TemplateStartScript when the
	// template cannot be used (marker missing or wrong, a copy the server
	// refuses to open): the runtime rebuilds the template, never starts it.
	TemplateDamaged = 75
)

// TemplateRevokeSQL leaves the admin without a password: the template's
// copies accept no TCP login (the image's pg_hba.conf asks for one) until
// a sandbox sets its own.
func TemplateRevokeSQL(admin string) []byte {
	return []byte("-- Written by sandboxer: a template holds no usable credential.\n" +
		"ALTER ROLE " + pgx.Identifier{admin}.Sanitize() + " PASSWORD NULL;\n")
}

// TemplateFinishScript is sourced by the image's entrypoint (a *.sh init
// file that is not executable) as its last init step, in the entrypoint's
// own shell as the image's service user: it stops the temporary server
// cleanly, writes the marker with the template's key, and ends the
// container with code 0 instead of starting the real server. pg_ctl is
// the image's own, the one the entrypoint started the server with.
func TemplateFinishScript(key string) []byte {
	return []byte("# Written by sandboxer: end of a template build (sourced by the entrypoint).\n" +
		"pg_ctl -D \"$PGDATA\" -m fast -w stop\n" +
		"printf '%s\\n' '" + key + "' > \"$PGDATA/" + TemplateMarker + "\"\n" +
		"exit 0\n")
}

// Session is one run of PostgreSQL's single-user mode: the database it
// opens and its statements, each ended by a semicolon and an empty line
// (postgres --single -j).
type Session struct {
	Database string
	SQL      []byte
}

// TemplateSessions set a copy's credentials: the admin's and the app
// role's SCRAM verifiers (computed by the caller), in one single-user
// session. Everything else InitScript makes is in the template already.
func TemplateSessions(c state.Credentials, adminVerifier, appVerifier string) []Session {
	var b bytes.Buffer
	fmt.Fprintf(&b, "ALTER ROLE %s PASSWORD %s;\n\n", pgx.Identifier{c.AdminUser}.Sanitize(), QuoteLiteral(adminVerifier))
	fmt.Fprintf(&b, "ALTER ROLE %s PASSWORD %s;\n\n", pgx.Identifier{c.User}.Sanitize(), QuoteLiteral(appVerifier))
	return []Session{{Database: "postgres", SQL: b.Bytes()}}
}

// TemplateStartScript is the sandbox container's entrypoint when it starts
// from a template, run with sh as the image's service user. A data
// directory that is initialised already (a restart, on a volume) is
// started as it is. Otherwise it checks the
// template (TemplateDamaged when it cannot be used), copies it into
// $PGDATA (the sandbox's volume or tmpfs), runs each session file
// (sessionFiles[i] holds sessions[i]'s SQL) in single-user mode with the
// server's own settings (serverArgs, without TLS: nothing listens), and
// then execs its arguments: the image's entrypoint and the postgres
// command, which find an initialised data directory and start the server.
// A failing statement ends the container with code 1 and its log quoting
// the error.
func TemplateStartScript(key string, sessions []Session, sessionFiles []string, serverArgs []string) []byte {
	return templateStart(`tpl=`+TemplateData+`
if [ "$(cat "$tpl/`+TemplateMarker+`" 2>/dev/null)" != '`+key+`' ] || [ ! -s "$tpl/PG_VERSION" ] || [ ! -s "$tpl/global/pg_control" ]; then
	echo "sandboxer: the template data directory is incomplete or damaged" >&2
	exit `+fmt.Sprint(TemplateDamaged)+`
fi
mkdir -p "$PGDATA"
chmod 0700 "$PGDATA"
cp -a "$tpl/." "$PGDATA/"
`, sessions, sessionFiles, serverArgs)
}

// TemplateArchivePart names the parts of a template kept as an archive
// (TemplateArchiveStartScript): TemplateMount/part-0000, part-0001, …,
// which sort in their order.
func TemplateArchivePart(i int) string { return fmt.Sprintf("part-%04d", i) }

// TemplateArchiveStartScript is TemplateStartScript for a runtime that
// keeps a template as a gzip'd tar of the data directory cut into parts,
// mounted read-only in TemplateMount (Kubernetes: ConfigMaps projected
// into one volume). The parts must add up to sum (their SHA-256, hex) and
// unpack to a data directory with the marker of key; otherwise the
// container ends with TemplateDamaged before anything starts. The rest is
// TemplateStartScript's: the sessions in single-user mode, then its
// arguments.
func TemplateArchiveStartScript(key, sum string, sessions []Session, sessionFiles []string, serverArgs []string) []byte {
	return templateStart(`tpl=`+TemplateMount+`
if [ "$(cat "$tpl"/part-* 2>/dev/null | sha256sum | cut -d ' ' -f 1)" != '`+sum+`' ]; then
	echo "sandboxer: the template archive is incomplete or damaged" >&2
	exit `+fmt.Sprint(TemplateDamaged)+`
fi
mkdir -p "$PGDATA"
chmod 0700 "$PGDATA"
if ! (umask 077 && cat "$tpl"/part-* | tar -xzf - -C "$PGDATA"); then
	echo "sandboxer: the template archive does not unpack" >&2
	exit `+fmt.Sprint(TemplateDamaged)+`
fi
if [ "$(cat "$PGDATA/`+TemplateMarker+`" 2>/dev/null)" != '`+key+`' ] || [ ! -s "$PGDATA/PG_VERSION" ] || [ ! -s "$PGDATA/global/pg_control" ]; then
	echo "sandboxer: the template archive unpacked to an incomplete data directory" >&2
	exit `+fmt.Sprint(TemplateDamaged)+`
fi
`, sessions, sessionFiles, serverArgs)
}

// templateStart is a start script: fill $PGDATA (fill, which ends the
// script with TemplateDamaged when it cannot), then the sessions, then
// exec the arguments.
func templateStart(fill string, sessions []Session, sessionFiles []string, serverArgs []string) []byte {
	return startScript(`[ -s "$PGDATA/PG_VERSION" ]`, fill, sessions, sessionFiles, serverArgs, "")
}

// startScript is a start script: when restarted (the test started is
// true) exec the arguments; else fill $PGDATA, run the sessions, run
// done, and exec the arguments.
func startScript(started, fill string, sessions []Session, sessionFiles []string, serverArgs []string, done string) []byte {
	var b strings.Builder
	b.WriteString(`# Written by sandboxer: start PostgreSQL from a copy of a template data directory.
set -eu
if ` + started + `; then
	# A restarted container whose data directory outlived it (a volume):
	# it is this sandbox's already.
	exec "$@"
fi
`)
	b.WriteString(fill)
	b.WriteString(`rm -f "$PGDATA/` + TemplateMarker + `"
single() {
	if ! postgres --single -j -D "$PGDATA"`)

	for _, a := range serverArgs {
		b.WriteString(" " + shellquote.Quote(a))
	}
	b.WriteString(` "$1" < "$2" > /tmp/sandboxer-single.log 2>&1; then
		cat /tmp/sandboxer-single.log >&2
		if grep -q -E 'FATAL: |PANIC: ' /tmp/sandboxer-single.log && ! grep -q -E 'ERROR: ' /tmp/sandboxer-single.log; then
			exit ` + fmt.Sprint(TemplateDamaged) + `
		fi
		exit 1
	fi
	if grep -q -E 'ERROR: |FATAL: |PANIC: ' /tmp/sandboxer-single.log; then
		cat /tmp/sandboxer-single.log >&2
		exit 1
	fi
}
`)
	for i, s := range sessions {
		fmt.Fprintf(&b, "single %s %s\n", shellquote.Quote(s.Database), shellquote.Quote(sessionFiles[i]))
	}
	b.WriteString(done)
	b.WriteString("rm -f /tmp/sandboxer-single.log\nexec \"$@\"\n")
	return []byte(b.String())
}

// SingleUserArgs are the server's settings of cmd (the container's
// command: "postgres", then -c pairs) without TLS, for single-user mode
// in a start script: nothing listens, and the certificate files need not
// be read.
func SingleUserArgs(cmd []string) []string {
	var out []string
	for i := 1; i+1 < len(cmd); i += 2 {
		if cmd[i] == "-c" && (strings.HasPrefix(cmd[i+1], "ssl") || strings.HasPrefix(cmd[i+1], "hba_file=")) {
			continue
		}
		out = append(out, cmd[i], cmd[i+1])
	}
	return out
}

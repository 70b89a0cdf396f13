package postgres

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sandboxer/sandboxer/state"
)

// The database setup runs in the image's own init phase. The official
// entrypoint (and the local image's copy of it) runs every
// /docker-entrypoint-initdb.d/*.sql once, on an empty data directory, with
// psql as POSTGRES_USER (sandboxer's admin, a superuser) against a temporary
// server that listens on the Unix socket only, and only then starts the real
// server. Setting up there takes about 90 ms against 200–250 ms for the
// logins and round trips of an admin session after start, and the real
// server's first TCP answer already comes from a finished sandbox. A
// restarted container keeps its data directory on a volume (see
// pgDataMounts), so the role, password, extensions and data survive it;
// on a tmpfs it initialises afresh and runs the script again (same role,
// password and extensions). The engine picks a new host port. psql runs with ON_ERROR_STOP, so a
// failing statement stops the entrypoint: the container exits and Create
// reports its log.
const (
	InitDir = "/docker-entrypoint-initdb.d"
	// InitScriptName sorts after the numbered scripts images ship
	// (postgis/postgis has 10_postgis.sh), so theirs run first.
	InitScriptName = "sandboxer.sql"
)

// InitScript is the SQL the entrypoint runs: the app role, from a SCRAM
// verifier computed here (the clear-text password never enters the
// container), the requested extensions in template1, and the app database
// cloned from template1 (from template0 with timescaledb, see below). feats must already be on the allowlist (validate);
// allowed is the whole allowlist, for the dependency check in
// ExtensionsBlock.
//
// Test frameworks create databases of their own (Django's test_NAME,
// Rails' db:create, Prisma's shadow database), so the role may CREATEDB —
// never SUPERUSER or CREATEROLE. A database it creates is a copy of
// template1, so creating the extensions there first, as the admin, gives
// every such database the same extensions as the app database, although
// the role could not create an untrusted one (vector, postgis) itself.
// The role cannot change template1 (it is not its owner), so one
// framework's test database cannot taint another's.
func InitScript(c state.Credentials, verifier string, feats, allowed []string) []byte {
	return initScript(c, QuoteLiteral(verifier), feats, allowed)
}

// TemplateInitScript is InitScript for a template (template.go): the same
// role, extensions and database, the role without a password.
func TemplateInitScript(c state.Credentials, feats, allowed []string) []byte {
	return initScript(c, "NULL", feats, allowed)
}

// initScript is InitScript with the role's PASSWORD clause as SQL.
func initScript(c state.Credentials, password string, feats, allowed []string) []byte {
	role := pgx.Identifier{c.User}.Sanitize()
	db := pgx.Identifier{c.Database}.Sanitize()
	var b bytes.Buffer
	b.WriteString("-- Written by sandboxer; run once by the image's entrypoint as the admin.\n")
	b.WriteString("\\set ON_ERROR_STOP on\n")
	fmt.Fprintf(&b, "CREATE ROLE %s LOGIN PASSWORD %s NOSUPERUSER NOCREATEROLE CREATEDB NOREPLICATION NOBYPASSRLS;\n",
		role, password)
	inTemplate, appOnly := splitTemplateFeatures(feats)
	if len(inTemplate) > 0 {
		// Same session user (the admin), in the template the app database
		// and every database the role creates are copied from.
		b.WriteString("\\connect template1\n")
		b.WriteString(ExtensionsBlock(inTemplate, allowed))
		// CREATE DATABASE refuses a template with other sessions in it;
		// leave it first.
		b.WriteString("\\connect postgres\n")
	}
	// FILE_COPY copies template1's few files instead of WAL-logging every
	// block (WAL_LOG, the default); its checkpoints cost nothing with fsync
	// off and an empty cluster.
	//
	// With TimescaleDB preloaded, its launcher starts a scheduler in every
	// database as the server starts, template1 included; that one leaves
	// once it sees a template, but while it connects it holds a session
	// there, and CREATE DATABASE … TEMPLATE template1 waits 5 s for it and
	// fails (seen on a loaded machine). The app database is then copied
	// from template0, which takes no connections, and gets every extension
	// itself.
	template := "template1"
	if len(appOnly) > 0 {
		template = "template0"
		appOnly = feats
	}
	fmt.Fprintf(&b, "CREATE DATABASE %s OWNER %s TEMPLATE %s STRATEGY = FILE_COPY;\n", db, role, template)
	if len(appOnly) > 0 {
		fmt.Fprintf(&b, "\\connect %s\n", db)
		b.WriteString(ExtensionsBlock(appOnly, allowed))
	}
	return b.Bytes()
}

// splitTemplateFeatures sets apart the extensions that must not go into
// template1. TimescaleDB starts a background scheduler in every database
// that has it; in template1 that worker holds a session, and CREATE
// DATABASE … TEMPLATE template1 then fails ("source database is being
// accessed by other users"). Those extensions are created in the app
// database only, so databases the role creates itself lack them.
func splitTemplateFeatures(feats []string) (inTemplate, appOnly []string) {
	for _, f := range feats {
		if f == "timescaledb" {
			appOnly = append(appOnly, f)
			continue
		}
		inTemplate = append(inTemplate, f)
	}
	return inTemplate, appOnly
}

// ExtensionsBlock creates each requested extension as the admin, in the
// current database. The fast path is a plain CREATE EXTENSION, which installs
// that one (allowed) extension or fails. When it fails, the decision is taken
// from the catalog, not from the error: an extension the image lacks is
// skipped, and so is one whose not yet installed dependencies include one off
// the allowlist (CASCADE would install it); otherwise CREATE EXTENSION …
// CASCADE runs, and if it fails too its error stops the init. A skipped
// extension is reported after start by Verify, with the image's
// name, which the init phase cannot produce.
func ExtensionsBlock(feats, allowed []string) string {
	return `DO $sandboxer$
DECLARE
	allowed text[] := ` + textArray(allowed) + `;
	ext text;
BEGIN
	FOREACH ext IN ARRAY ` + textArray(feats) + ` LOOP
		BEGIN
			EXECUTE format('CREATE EXTENSION IF NOT EXISTS %I', ext);
		EXCEPTION WHEN OTHERS THEN
			CONTINUE WHEN NOT EXISTS (SELECT FROM pg_available_extensions WHERE name = ext);
			CONTINUE WHEN EXISTS (
				WITH RECURSIVE dep(name) AS (
					SELECT ext::name COLLATE "C" -- as the catalog's names
					UNION
					SELECT r.name
					FROM dep
					JOIN pg_available_extensions e ON e.name = dep.name
					JOIN pg_available_extension_versions v ON v.name = e.name AND v.version = e.default_version
					CROSS JOIN LATERAL unnest(v.requires) AS r(name)
					WHERE dep.name NOT IN (SELECT extname FROM pg_extension)
				)
				SELECT FROM dep
				WHERE name <> ALL (allowed) AND name NOT IN (SELECT extname FROM pg_extension));
			EXECUTE format('CREATE EXTENSION IF NOT EXISTS %I CASCADE', ext);
		END;
	END LOOP;
END
$sandboxer$;
`
}

// textArray renders a text[] literal: ARRAY['a', 'b']::text[].
func textArray(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = QuoteLiteral(s)
	}
	return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
}

// UTCUnlessSet sets TZ=Etc/UTC unless the image sets TZ itself. Without TZ,
// initdb finds the default time zone by comparing the system's clock
// settings with every zone in the time-zone database, which takes 0.2–0.3 s
// of a cold start here; with TZ it just checks that zone. A container
// without a configured zone is in UTC anyway, so the server's setting
// (timezone = 'Etc/UTC') is the one initdb would have found.
func UTCUnlessSet(imageEnv func(name string) string) []string {
	if imageEnv("TZ") != "" {
		return nil
	}
	return []string{"TZ=Etc/UTC"}
}

// ServerBinFirst returns a PATH setting that puts the server's own bin
// directory (/usr/lib/postgresql/<major>/bin) first, or nothing when the
// image's PATH has none or has it first already. Debian-based images (the
// official one among them) append it, so `psql` resolves to
// postgresql-common's Perl wrapper, which costs about 50 ms per call; the
// entrypoint calls psql twice during the first start (its database check
// and our init script), both on the way to ready.
func ServerBinFirst(imageEnv func(name string) string) []string {
	dirs := strings.Split(imageEnv("PATH"), ":")
	i := slices.IndexFunc(dirs, func(d string) bool {
		return strings.HasPrefix(d, "/usr/lib/postgresql/") && strings.HasSuffix(d, "/bin")
	})
	if i <= 0 {
		return nil
	}
	reordered := append([]string{dirs[i]}, slices.Delete(slices.Clone(dirs), i, i+1)...)
	return []string{"PATH=" + strings.Join(reordered, ":")}
}

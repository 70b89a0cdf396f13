package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// A MySQL feature is a server plugin the image ships but does not load:
// sandboxer installs it (INSTALL SONAME, as root, in the init phase), and
// it stays installed in that instance's system tables. Components (Oracle
// MySQL's other extension kind) do not exist in MariaDB.
//
// Plugin is one allowlisted plugin: the feature name in configurations,
// the library (plugin_dir/Soname.so) and the plugin name the server
// reports in information_schema.
type Plugin struct {
	Feature, Soname, PluginName, What string
}

// Plugins is the allowlist. A plugin is on it only if it gives the
// handed-out user no way out of its own databases: no file access, no
// network access, no code outside the server, nothing server-wide a
// sandbox user could change, no authentication or audit policy. In:
//
//   - archive: the ARCHIVE storage engine (compressed, insert-only tables
//     in the data directory).
//   - blackhole: the BLACKHOLE engine (accepts writes, keeps nothing).
//   - mysql_json: the MYSQL_JSON type, which reads JSON columns of tables
//     that come from MySQL 5.7.
//
// Shipped by mariadb-server and kept out: ha_federated, ha_federatedx and
// ha_sphinx (tables on other servers: the network, as dblink is for
// PostgreSQL), handlersocket (a second, unauthenticated port), disks (the
// host's disks), server_audit and sql_errlog (write files, server-wide),
// file_key_management (reads key files), auth_* and the password checks
// (who may log in), wsrep_info (Galera), query_response_time and
// metadata_lock_info (other sessions' activity). Debian's separate plugin
// packages (CONNECT: files and ODBC; Spider: other servers; S3; the
// gssapi/cracklib/hashicorp ones) are kept out for the same reasons;
// mroonga, oqgraph and rocksdb would pass but are not in the image.
func Plugins() []Plugin {
	return []Plugin{
		{"archive", "ha_archive", "ARCHIVE", "the ARCHIVE storage engine"},
		{"blackhole", "ha_blackhole", "BLACKHOLE", "the BLACKHOLE storage engine"},
		{"mysql_json", "type_mysql_json", "MYSQL_JSON", "MySQL 5.7's JSON column type"},
	}
}

// Allowed is the allowlist's feature names, sorted.
func Allowed() []string {
	var out []string
	for _, p := range Plugins() {
		out = append(out, p.Feature)
	}
	slices.Sort(out)
	return out
}

func pluginOf(feature string) (Plugin, bool) {
	for _, p := range Plugins() {
		if p.Feature == feature {
			return p, true
		}
	}
	return Plugin{}, false
}

// InstallBlock installs the requested plugins as root. A library the
// image lacks is skipped (the handler), so the init goes on and Verify
// reports it after start with the image's name, which the init phase
// cannot; a feature off the allowlist is never installed.
func InstallBlock(feats []string) string {
	var stmts []string
	for _, f := range feats {
		if p, ok := pluginOf(f); ok {
			stmts = append(stmts, "  INSTALL SONAME "+QuoteString(p.Soname)+";\n")
		}
	}
	if len(stmts) == 0 {
		return ""
	}
	return "DELIMITER //\nBEGIN NOT ATOMIC\n  DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;\n" +
		strings.Join(stmts, "") + "END//\nDELIMITER ;\n"
}

// Verify checks, as the app user, that every requested plugin is active,
// and returns the allowlisted plugins the image provides, feature →
// version (information_schema.ALL_PLUGINS lists the plugin directory's
// libraries, installed or not).
func Verify(ctx context.Context, db *sql.DB, ref string, feats []string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT PLUGIN_NAME, PLUGIN_STATUS, PLUGIN_VERSION
		FROM information_schema.ALL_PLUGINS`)
	if err != nil {
		return nil, fmt.Errorf("list plugins: %w", err)
	}
	defer rows.Close()
	status, version := map[string]string{}, map[string]string{}
	for rows.Next() {
		var name, st, ver string
		if err := rows.Scan(&name, &st, &ver); err != nil {
			return nil, fmt.Errorf("list plugins: %w", err)
		}
		status[strings.ToUpper(name)], version[strings.ToUpper(name)] = st, ver
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list plugins: %w", err)
	}
	available := map[string]string{}
	for _, p := range Plugins() {
		if v, ok := version[p.PluginName]; ok {
			available[p.Feature] = v
		}
	}
	for _, f := range feats {
		p, ok := pluginOf(f)
		if !ok {
			return nil, fmt.Errorf("mysql feature %q is not on the allowlist (allowed: %s)", f, strings.Join(Allowed(), ", "))
		}
		if _, ok := available[f]; !ok {
			names := make([]string, 0, len(available))
			for n := range available {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("mysql image %q does not provide plugin %q for feature %q (available allowed features: %s)",
				ref, p.Soname, f, strings.Join(names, ", "))
		}
		if status[p.PluginName] != "ACTIVE" {
			return nil, fmt.Errorf("mysql feature %q: plugin %s is %s, not ACTIVE", f, p.PluginName, strings.ToLower(cmpOr(status[p.PluginName], "not installed")))
		}
	}
	return available, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

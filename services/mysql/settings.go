package mysql

// SecureFilePrivDir is where the server may import and export files
// (secure_file_priv). The runtime mounts an empty, read-only directory
// there (the local image has it, root-owned and closed): nothing to
// read, nowhere to write. The handed-out user lacks FILE anyway; this is
// the second wall, against root and a plugin. The server refuses to start
// when the directory does not exist.
const SecureFilePrivDir = "/var/lib/mysql-files"

// SafetyArgs close the server's file routes whoever is logged in:
// LOAD DATA LOCAL INFILE is refused (local_infile off: a client could
// otherwise be asked for its files, and the user could read the
// server's), file import and export are confined to SecureFilePrivDir,
// and tables cannot be symlinked out of the data directory.
func SafetyArgs() []string {
	return []string{
		"--local-infile=0",
		"--secure-file-priv=" + SecureFilePrivDir,
		"--skip-symbolic-links",
	}
}

// LeanArgs are server settings for a disposable instance, chosen for
// memory and speed, each one a user of a sandbox could set the same way
// in their own my.cnf; none disables a feature.
//
//   - innodb_buffer_pool_size 8M: the page cache holds the data anyway.
//   - innodb_log_buffer_size 1M, aria_pagecache_buffer_size 1M,
//     key_buffer_size 1M: buffers a small database never fills.
//   - innodb_flush_log_at_trx_commit 0, innodb_doublewrite 0, sync_binlog
//     0: no fsync per commit; nothing outlives the container.
//   - performance_schema off (MariaDB's default; MySQL's is on, at
//     hundreds of MB).
//   - max_connections 100.
func LeanArgs() []string {
	return []string{
		"--innodb-buffer-pool-size=8M",
		"--innodb-log-buffer-size=1M",
		"--aria-pagecache-buffer-size=1M",
		"--key-buffer-size=1M",
		"--innodb-flush-log-at-trx-commit=0",
		"--innodb-doublewrite=0",
		"--sync-binlog=0",
		"--performance-schema=OFF",
		"--max-connections=100",
	}
}

// ServerArgs are the arguments a runtime passes to the image's command:
// SafetyArgs then LeanArgs.
func ServerArgs() []string {
	return append(SafetyArgs(), LeanArgs()...)
}

// TLSArgs switch TLS on and refuse every connection that is not TLS
// (require_secure_transport; the entrypoint's temporary server listens on
// the socket only). Clients are not asked for certificates: they log in
// with passwords. The paths are where the runtime put the files.
func TLSArgs(certFile, keyFile, caFile string) []string {
	return []string{
		"--ssl-cert=" + certFile,
		"--ssl-key=" + keyFile,
		"--ssl-ca=" + caFile,
		"--require-secure-transport=ON",
		"--tls-version=TLSv1.2,TLSv1.3",
	}
}

package config

// URLShape is how a service's connection URL is written
// (state.Credentials.URL): the catalogue's data for it, kept beside the
// allowlist and the default images, because state (which writes URLs)
// sits below the services' packages.
type URLShape struct {
	Scheme    string // e.g. "postgres"
	TLSScheme string // the scheme with TLS, where it differs ("rediss")
	// DatabasePath makes the path the credentials' database; else Path.
	DatabasePath bool
	Path         string
	Query        string // the query without TLS ("sslmode=disable")
	TLSQuery     string // the query with TLS ("sslmode=verify-full")
	// CAFileParam is the query parameter that names the CA file with TLS
	// ("sslrootcert"); "" where clients take it from elsewhere (Redis
	// clients from SANDBOXER_REDIS_CA, redis-cli --cacert).
	CAFileParam string
}

// ServiceURLShape is the URL shape of a catalog service; false for a
// service the build does not know (its URL is then <service>://…).
func ServiceURLShape(service string) (URLShape, bool) {
	shapes := []struct {
		service string
		shape   URLShape
	}{
		// libpq and pgx verify the server against the instance's CA
		// file (sslmode=verify-full).
		{"postgres", URLShape{Scheme: "postgres", DatabasePath: true, Query: "sslmode=disable",
			TLSQuery: "sslmode=verify-full", CAFileParam: "sslrootcert"}},
		{"redis", URLShape{Scheme: "redis", TLSScheme: "rediss", Path: "/0"}},
		// MySQL Shell's URI parameters (services/mysql.URL): with TLS the
		// server is verified against the instance's CA file.
		{"mysql", URLShape{Scheme: "mysql", DatabasePath: true,
			TLSQuery: "ssl-mode=VERIFY_IDENTITY", CAFileParam: "ssl-ca"}},
		// Valkey clients read the Redis scheme (services/valkey.URL).
		{"valkey", URLShape{Scheme: "redis", TLSScheme: "rediss", Path: "/0"}},
	}
	for _, s := range shapes {
		if s.service == service {
			return s.shape, true
		}
	}
	return URLShape{}, false
}

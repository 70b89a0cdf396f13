package kubernetes

// User and database names inside every sandbox, as on Docker. The admin
// is sandboxer's own; only the app user is handed out.
const (
	appUser     = "app"
	appDatabase = "app"
	adminUser   = "sbx_admin"
)

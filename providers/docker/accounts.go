package docker

// User and database names inside every sandbox. The admin is sandboxer's
// own; only the app user is handed out.
const (
	appUser     = "app"
	appDatabase = "app"
	adminUser   = "sbx_admin"
)

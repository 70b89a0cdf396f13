package mysql

import (
	"context"
	"crypto/tls"

	"github.com/sandboxer/sandboxer/state"
)

// Name is the service's name.
const Name = "mysql"

// Port is the port the server listens on.
const Port = 3306

// AdminUser is the admin account: the image's root, whose password the
// runtime gives the entrypoint (RootPasswordFileEnv); never handed out.
const AdminUser = "root"

// RootPasswordFileEnv names the file holding the root password. Both
// official images (mariadb and mysql) read MYSQL_ROOT_PASSWORD_FILE, and
// the local image too; a file rather than MYSQL_ROOT_PASSWORD keeps the
// password out of the container's environment (docker inspect).
const RootPasswordFileEnv = "MYSQL_ROOT_PASSWORD_FILE"

// PasswordFile is the file, in the runtime's secret directory, that holds
// the root password for RootPasswordFileEnv.
const PasswordFile = "mysql-root-password"

// DataDir is where the images keep their data.
const DataDir = "/var/lib/mysql"

// Service is MySQL for the services.Service contract.
type Service struct{}

func (Service) Name() string    { return Name }
func (Service) Port() int       { return Port }
func (Service) Account() string { return "mysql" }

// StartRank: the system tables' initialisation and the restart behind it
// make MariaDB's first start the longest of the services (seconds), as
// initdb is PostgreSQL's; it goes first with it.
func (Service) StartRank() int { return 0 }

// Ping logs in as c's user to its database and runs SELECT 1.
func (Service) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
}

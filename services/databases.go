package services

import (
	"slices"

	"github.com/sandboxer/sandboxer/services/contract"
)

// The database-per-test shapes (services/contract).
type (
	DatabaseHost    = contract.DatabaseHost
	TestDatabases   = contract.TestDatabases
	TestMigration   = contract.Migration
	DatabaseOptions = contract.DatabaseOptions
	TestDatabase    = contract.TestDatabase
)

// DatabaseHostOf is the service among svcs that hosts per-test
// databases, with its maker: the first such in the catalogue's order
// (PostgreSQL before MySQL), whatever order svcs lists them in, so a
// block and its instance's record agree. ok is false when none does.
func DatabaseHostOf(svcs []string) (name string, host DatabaseHost, ok bool) {
	for _, s := range All() {
		if h, is := s.(DatabaseHost); is && slices.Contains(svcs, s.Name()) {
			return s.Name(), h, true
		}
	}
	return "", nil, false
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/databases"
	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// OpenDatabases is PostgreSQL's database per test (contract.DatabaseHost):
// package databases (templates, clones, pools, prefetch) over an admin
// connection to the instance.
func (Service) OpenDatabases(ctx context.Context, c state.Credentials) (contract.TestDatabases, error) {
	if c.AdminUser == "" {
		return nil, errors.New("the instance's record has no admin user to host databases with")
	}
	admin := c
	admin.User, admin.Password = c.AdminUser, c.AdminPassword
	srv, err := databases.Open(ctx, admin.URL(Name), c.Host, c.Port)
	if err != nil {
		return nil, err
	}
	return testDatabases{srv}, nil
}

type testDatabases struct{ *databases.Server }

func (t testDatabases) Take(ctx context.Context, m contract.Migration, o contract.DatabaseOptions) (contract.TestDatabase, error) {
	var mig databases.Migration
	switch run := m.Run.(type) {
	case nil:
		mig = databases.SQL(m.SQL...)
	case func(context.Context, *pgx.Conn) error:
		mig = databases.Migration{Hash: m.Hash, Run: run, SQL: m.SQL}
	default:
		return contract.TestDatabase{}, fmt.Errorf("databases: a PostgreSQL migration function takes a *pgx.Conn, not %T", m.Run)
	}
	d, err := t.Server.Take(ctx, mig, databases.Options{CreateDB: o.CreateDB, TTL: o.TTL, Remote: o.Remote, ExactLease: o.ExactLease})
	if err != nil {
		return contract.TestDatabase{}, err
	}
	return contract.TestDatabase{Name: d.Name, User: d.Role, Password: state.Secret(d.Password), Host: d.Host, Port: d.Port}, nil
}

var _ contract.DatabaseHost = Service{}

package docker

import (
	"context"
	"errors"
	"slices"
	"testing"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// What test frameworks do to a database server, on the real engine: the
// role owns a database with the configured name, may create databases of
// its own (Django's test_NAME, Rails' db:create, Prisma's shadow database)
// and finds in them the extensions the admin created, but stays
// unprivileged: no superuser, no CREATEROLE, no untrusted extension of its
// own, no change to template1.
func TestFrameworkDatabases(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	lineage := newLineage(t, p)
	req := apply.CreateRequest{
		Address: "sandbox.django", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"vector"}},
		Database: "pgvector_go_test",
	}
	created, err := p.Create(context.Background(), req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer func() {
		if err := p.Delete(context.Background(), recordFor(req, created)); err != nil {
			t.Error(err)
		}
		assertNothingLabelled(t, p, lineage)
	}()
	pg := created.Credentials["postgres"]
	if pg.Database != "pgvector_go_test" {
		t.Fatalf("credentials name database %q, want pgvector_go_test", pg.Database)
	}
	ctx := context.Background()
	app := connectAs(t, pg, pg.Database)

	var super, createRole, createDB bool
	if err := app.QueryRow(ctx, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").
		Scan(&super, &createRole, &createDB); err != nil {
		t.Fatal(err)
	}
	if super || createRole || !createDB {
		t.Errorf("role: superuser=%v createrole=%v createdb=%v; want only createdb", super, createRole, createDB)
	}
	var owner string
	if err := app.QueryRow(ctx, "SELECT pg_get_userbyid(datdba)::text FROM pg_database WHERE datname = current_database()").Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner != pg.User {
		t.Errorf("database %s is owned by %q, want the role %q", pg.Database, owner, pg.User)
	}

	// Django connects to the postgres database to create test_NAME.
	maint := connectAs(t, pg, "postgres")
	for _, db := range []string{"test_pgvector_go_test", "prisma_shadow"} {
		if _, err := maint.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			t.Fatalf("CREATE DATABASE %s as the role: %v", db, err)
		}
	}
	test := connectAs(t, pg, "test_pgvector_go_test")
	// pgvector-go's own tests run this first; it must be a no-op, not a
	// permission error.
	if _, err := test.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
		t.Fatalf("CREATE EXTENSION IF NOT EXISTS vector in a database the role created: %v", err)
	}
	if err := pgxvec.RegisterTypes(ctx, test); err != nil {
		t.Fatalf("pgvector-go RegisterTypes: %v", err)
	}
	if _, err := test.Exec(ctx, "CREATE TABLE items (id bigserial PRIMARY KEY, embedding vector(3))"); err != nil {
		t.Fatal(err)
	}
	if _, err := test.Exec(ctx, "CREATE INDEX ON items USING hnsw (embedding vector_l2_ops)"); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]float32{{1, 1, 1}, {2, 2, 2}, {1, 1, 2}} {
		if _, err := test.Exec(ctx, "INSERT INTO items (embedding) VALUES ($1)", pgvector.NewVector(v)); err != nil {
			t.Fatal(err)
		}
	}
	var nearest pgvector.Vector
	if err := test.QueryRow(ctx, "SELECT embedding FROM items ORDER BY embedding <-> $1 LIMIT 1", pgvector.NewVector([]float32{1, 1, 1})).Scan(&nearest); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nearest.Slice(), []float32{1, 1, 1}) {
		t.Errorf("nearest = %v, want [1 1 1]", nearest.Slice())
	}
	// A trusted extension the role may add itself, as the owner.
	if _, err := test.Exec(ctx, "CREATE EXTENSION pg_trgm"); err != nil {
		t.Errorf("CREATE EXTENSION pg_trgm (trusted) as the owner of a created database: %v", err)
	}
	// An untrusted one the admin did not create stays out of reach.
	expectDenied(t, test, "CREATE EXTENSION postgis")
	test.Close(ctx)

	// template1 is the admin's: the role cannot plant objects in it for
	// every later database.
	tmpl := connectAs(t, pg, "template1")
	expectDenied(t, tmpl, "CREATE EXTENSION pg_trgm")
	expectDenied(t, tmpl, "CREATE TABLE planted (id int)")
	tmpl.Close(ctx)
	expectDenied(t, maint, "CREATE ROLE intruder LOGIN")
	expectDenied(t, maint, "ALTER ROLE "+pgx.Identifier{pg.User}.Sanitize()+" SUPERUSER")

	for _, db := range []string{"test_pgvector_go_test", "prisma_shadow"} {
		if _, err := maint.Exec(ctx, "DROP DATABASE "+db); err != nil {
			t.Errorf("DROP DATABASE %s as its owner: %v", db, err)
		}
	}
}

// connectAs logs in as the handed-out role to db, closed at the end of the
// test.
func connectAs(t *testing.T, pg state.Credentials, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgsvc.Connect(context.Background(), pg.Host, pg.Port, pg.User, pg.Password, db, nil)
	if err != nil {
		t.Fatalf("connect as %s to %s: %v", pg.User, db, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// expectDenied runs sql and wants PostgreSQL's insufficient_privilege.
func expectDenied(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("%s as the role: %v, want permission denied (42501)", sql, err)
	}
}

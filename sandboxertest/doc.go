// Package sandboxertest hands a Go test a live sandbox:
//
//	func TestOrders(t *testing.T) {
//		sandboxertest.RequireDocker(t)
//		sb := sandboxertest.Request(t, "sandbox.agent")
//		pool, err := pgxpool.New(ctx, sb.PostgresURL())
//		…
//	}
//
// Request asks for an instance of an on-demand block by the cache rule,
// keyed by a stable name derived from the package directory and the test
// name (or Key), so a second `go test` run finds the same instance alive
// and reuses it instead of provisioning again. By default the instance is
// released when the test ends (t.Cleanup); Keep, or SANDBOXER_KEEP=1 in
// the environment, leaves it for the next run (its ttl still bounds it).
//
// Database hands a test a fresh database of its own instead (PostgreSQL,
// or MySQL on a mysql block), made from a migrated template inside one
// kept host instance of the
// block (sandbox.NAME["sbx-databases"], shared by every test and run, its
// 30-day ttl bounding it), and drops it at t.Cleanup:
//
//	db := sandboxertest.Database(t, "sandbox.db", sandboxertest.Migrations(schema))
//
// It works through the library on the nearest directory holding
// *.sbx.hcl (Dir to choose one), or through a running `sandboxer serve`
// when SANDBOXER_API_URL (and SANDBOXER_API_TOKEN, or
// SANDBOXER_API_TOKEN_FILE, e.g. a pod's projected ServiceAccount token,
// read at each call) are set.
//
// What this package must never do: log credentials (only addresses and
// generations), or leave an instance behind that the caller did not ask
// to keep (the databases' host is kept by design: it is what makes a
// database take milliseconds), nor a database after its test.
package sandboxertest

// Package rotate binds fresh credentials to a running sandbox over the
// network: a new password for the PostgreSQL app role (ALTER ROLE …
// PASSWORD with a SCRAM-SHA-256 verifier, so the clear text never reaches
// the server) and a new secret for the Redis app user (ACL SETUSER …
// resetpass #sha256, likewise), each done as the service's admin user
// whose credentials are in the record. It is how a warm-pool member is
// handed to its claimant with credentials nobody saw before.
//
// Rules:
//   - Runtime-neutral: it talks to the services' own protocols at the
//     endpoints the record names, never to an engine, so any runtime
//     (Docker, Kubernetes) that records admin credentials can use it.
//   - After Rotate returns, the old app credentials no longer log in, and
//     sessions opened with them are closed (pg_terminate_backend, CLIENT
//     KILL USER).
//   - How each service rotates is the service's own (services.Service's
//     Rotate: services/postgres, services/redis); a Redis secret is
//     changed in memory (the ACL file stays read-only), see
//     services/redis.Rotate for what a restart means.
//   - TLS material is kept: the instance's CA is its own, is not secret,
//     and was never handed out, so it stays unique to the claimant.
//   - Secrets never appear in errors: messages name the service and the
//     step, and server replies are scrubbed of the passwords involved.
package rotate

# The sandbox pgvector-go's own test suite runs against: its tests connect
# to the database pgvector_go_test through libpq's environment (PGHOST,
# PGPORT, PGUSER, PGPASSWORD) and run CREATE EXTENSION IF NOT EXISTS vector.
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
}

project "pgvector" {
  services   = ["postgres"]
  extensions = { postgres = ["vector"] }
  database   = "pgvector_go_test"
  env_prefix = "SUITE_"
}

sandbox "suite" {
  project = project.pgvector
  ttl     = "1h"
}

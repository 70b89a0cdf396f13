# Quick start: one project using PostgreSQL with pgvector and Redis with
# RediSearch, and one sandbox for local development.
#
# This machine has no container registry, so the provider block points at
# the images `make images` builds from Debian packages. Elsewhere, delete
# the block: with no image configured, the plan picks the official image
# that has what each sandbox asks for and shows it, here
# pgvector/pgvector:pg17 (vector) and redis:8 (search is built in and
# loaded by the image, so it needs no module path).
provider "docker" {
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
  image "redis" {
    ref     = "sandboxer.local/redis:7"
    modules = { search = "/usr/lib/redis/modules/redisearch.so" }
  }
}

project "shop" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["vector"]
    redis    = ["search"]
  }
}

sandbox "dev" {
  project = project.shop
  ttl     = "8h"
}

output "database_url" {
  value     = sandbox.dev.postgres.url
  sensitive = true
}

output "redis_port" {
  value = sandbox.dev.redis.port
}

# A Go test that asks for its own sandbox: see gotest_test.go.
#
# This machine has no container registry, so the provider block points at
# the images `make images` builds. Elsewhere, delete the block: the plan
# then picks the official images for the features, pgvector/pgvector:pg17
# (vector) and redis:8.
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
  }
}

# Every test gets its own instance of this template, keyed by its name.
sandbox "test" {
  project   = project.shop
  on_demand = true
  ttl       = "2h"
}

# Review: what a pull request that adds a feature looks like. Apply this
# file, then change `redis = []` to `redis = ["search"]` and run
#
#   sandboxer plan --out pr.plan
#   sandboxer show --format markdown pr.plan
#
# The markdown names the replace, why ("redis feature \"search\" is not
# provisioned") and that credentials rotate; the postgres-only sandbox
# stays reused because its cache already covers what it asks for.
# As in the other examples, the provider block names the local images
# `make images` builds; elsewhere delete it and the plan picks the
# official postgres:17 and redis:8 (search built in), and shows so.
provider "docker" {
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
  image "redis" {
    ref     = "sandboxer.local/redis:7"
    modules = { search = "/usr/lib/redis/modules/redisearch.so" }
  }
}

project "catalog" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["pg_trgm"]
  }
}

sandbox "api" {
  project  = project.catalog
  services = ["postgres"]
}

sandbox "indexer" {
  project    = project.catalog
  extensions = { redis = [] }
}

# CI: one sandbox per test-matrix entry, each with only the services its
# suite needs. In a GitHub Actions step:
#
#   sandboxer apply --auto-approve
#   sandboxer env 'sandbox.suite["search"]' --format github >> "$GITHUB_ENV"
#
# The env command writes NAME=value lines for $GITHUB_ENV on stdout and
# registers the passwords and URLs as masked values on stderr.
variable "suites" {
  type = map(list(string))
  default = {
    unit   = ["postgres"]
    search = ["postgres", "redis"]
  }
}

# This machine has no container registry, so the provider block points at
# the images `make images` builds. Elsewhere, delete the block: the plan
# then picks the official postgres:17 (pg_trgm is in its contrib) and
# redis:8 (search built in).
provider "docker" {
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
  image "redis" {
    ref     = "sandboxer.local/redis:7"
    modules = { search = "/usr/lib/redis/modules/redisearch.so" }
  }
}

project "api" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["pg_trgm"]
  }
}

sandbox "suite" {
  for_each   = var.suites
  project    = project.api
  services   = each.value
  extensions = each.key == "search" ? { redis = ["search"] } : {}
  ttl        = "2h"
}

# A CI sandbox is short-lived: sandboxer plan warns (plan --fail-on-check
# fails) when a suite would get a longer TTL.
check "short_lived" {
  assert {
    condition     = alltrue([for s in sandbox.suite : s.ttl_seconds > 0 && s.ttl_seconds <= 8 * 3600])
    error_message = "Every CI sandbox needs a TTL of at most 8h."
  }
}

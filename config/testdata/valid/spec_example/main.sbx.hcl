variable "ttl" {
  type    = string
  default = "4h"
}

provider "docker" {
  # host defaults to DOCKER_HOST / the local socket
  image "postgres" { ref = "postgres:17" }   # the defaults when omitted
  image "redis"    { ref = "redis:8" }
}

project "billing" {
  services = ["postgres", "redis"]          # the opted-in set
  extensions = {                            # the standing feature set
    postgres = ["vector", "postgis"]
    redis    = ["search"]
  }
}

sandbox "ci" {
  project    = project.billing
  services   = ["postgres"]                 # what this sandbox needs; default: all opted
  extensions = { postgres = ["pg_trgm"] }   # per-sandbox override
  ttl        = var.ttl
}

output "ci_database_url" {
  value     = sandbox.ci.postgres.url
  sensitive = true
}

# Many agents, one server: the configuration `sandboxer serve --tenants
# tenants.hcl` serves. Each tenant of tenants.hcl may use the on-demand
# blocks it names; see docs/security.md (the tenant model).
provider "docker" {
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
  image "redis" {
    ref = "sandboxer.local/redis:7"
  }
}

project "agents" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["pg_trgm"] }
}

sandbox "agent" {
  project   = project.agents
  services  = ["postgres"]
  on_demand = true
  ttl       = "1h"
}

sandbox "cache" {
  project   = project.agents
  services  = ["redis"]
  on_demand = true
  ttl       = "30m"
}

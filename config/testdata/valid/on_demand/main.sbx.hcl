project "agents" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector"] }
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "1h"
}

output "dev7_url" {
  value     = sandbox.agent["dev-7"].postgres.url
  sensitive = true
}

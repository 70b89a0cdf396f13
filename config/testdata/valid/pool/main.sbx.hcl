project "p" {
  services = ["postgres", "redis"]
}

sandbox "agent" {
  project   = project.p
  on_demand = true
  ttl       = "2h"
  pool {
    size = 4
    ttl  = "30m"
  }
}

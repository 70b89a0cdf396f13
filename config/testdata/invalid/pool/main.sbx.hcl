project "p" {
  services = ["redis"]
}

sandbox "zero" {
  project   = project.p
  on_demand = true
  pool {
    size = 0 # ERROR: Invalid value
  }
}

sandbox "huge" {
  project   = project.p
  on_demand = true
  pool {
    size = 257 # ERROR: Invalid value
  }
}

sandbox "fraction" {
  project   = project.p
  on_demand = true
  pool {
    size = 1.5 # ERROR: Invalid value
  }
}

sandbox "declared" {
  project = project.p
  pool { # ERROR: Pool on a sandbox that is not on demand
    size = 2
  }
}

sandbox "twice" {
  project   = project.p
  on_demand = true
  pool {
    size = 1
  }
  pool { # ERROR: Duplicate pool block
    size = 2
  }
}

sandbox "ttl" {
  project   = project.p
  on_demand = true
  pool {
    size = 1
    ttl  = "1s" # ERROR: Invalid ttl
  }
}

sandbox "missing" {
  project   = project.p
  on_demand = true
  pool { # ERROR: Missing required argument
  }
}

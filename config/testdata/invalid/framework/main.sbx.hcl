project "p" {
  services   = ["postgres", "redis"]
  database   = "Shop" # ERROR: Invalid database name
  env_prefix = "1BAD" # ERROR: Invalid env_prefix

  profile "rag" {
    services   = ["postgres", "mongodb"] # ERROR: Unknown service
    extensions = { postgres = ["plpython3u"] } # ERROR: Feature not allowed
  }

  profile "rag" { # ERROR: Duplicate profile block
  }

  profile "empty" {
    services = [] # ERROR: Empty services list
  }
}

project "cache" {
  services = ["redis"]
  database = "cache_db" # ERROR: Database name without postgres

  profile "pg" {
    services   = ["postgres"] # ERROR: Service not opted in by project
    extensions = { postgres = ["vector"] } # ERROR: Extensions for a service not opted in
  }
}

sandbox "reserved" {
  project  = project.p
  database = "template1" # ERROR: Invalid database name
}

sandbox "dash" {
  project    = project.p
  database   = "my-db" # ERROR: Invalid database name
  env_prefix = "A B" # ERROR: Invalid env_prefix
}

sandbox "redis_only" {
  project  = project.cache
  database = "x" # ERROR: Database name without postgres
}

sandbox "typed" {
  project  = project.p
  database = ["a"] # ERROR: Incorrect attribute value type
}

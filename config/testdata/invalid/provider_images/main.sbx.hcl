provider "docker" {
  memory_mb  = 1.5 # ERROR: Invalid value
  pids_limit = 0   # ERROR: Invalid value
  image "mongodb" { # ERROR: Unknown service
    ref = "mongo:8"
  }
  image "redis" {
    ref     = "" # ERROR: Invalid image reference
    modules = { search = "" } # ERROR: Invalid module path
  }
  image "postgres" { # ERROR: Missing required argument
  }
}

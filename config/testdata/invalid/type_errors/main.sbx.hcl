variable "n" {
  type    = number
  default = "lots" # ERROR: Invalid value for input variable
}

provider "docker" {
  memory_mb  = "lots" # ERROR: Incorrect attribute value type
  pids_limit = -1     # ERROR: Invalid value
}

project "billing" {
  services = "postgres" # ERROR: Incorrect attribute value type
}

project "shop" {
  services = ["postgres", ["redis"]] # ERROR: Incorrect attribute value type
}

project "ok" {
  services = ["postgres"]
  extensions = {
    postgres = "vector" # ERROR: Incorrect attribute value type
  }
}

sandbox "ci" {
  project   = project.ok
  ttl       = ["4h"] # ERROR: Incorrect attribute value type
  on_demand = "maybe" # ERROR: Incorrect attribute value type
}

sandbox "fn" {
  project  = project.ok
  services = upper("a", "b") # ERROR: Too many function arguments
}

output "sensitive" {
  value     = 1
  sensitive = "very" # ERROR: Incorrect attribute value type
}

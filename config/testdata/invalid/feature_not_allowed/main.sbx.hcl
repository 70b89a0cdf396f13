provider "docker" {
  image "redis" {
    ref = "redis:8"
    modules = {
      search   = "/opt/redis/search.so"
      debugger = "/opt/redis/debug.so" # ERROR: Feature not allowed
    }
  }
}

project "billing" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["vector", "plpython3u"] # ERROR: Feature not allowed
    redis    = ["search"]
  }
}

sandbox "ci" {
  project    = project.billing
  extensions = { postgres = ["file_fdw"], redis = ["json"] } # ERROR: Feature not allowed
}

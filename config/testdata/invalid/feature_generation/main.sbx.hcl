provider "docker" {
  image "redis" {
    ref = "sandboxer.local/redis:7"
    modules = {
      "search@1" = "/usr/lib/redis/modules/redisearch.so" # ERROR: Invalid module feature
    }
  }
}

project "shop" {
  services = ["redis", "valkey", "postgres"]
  extensions = {
    redis  = ["search@7"] # ERROR: Feature not allowed
    valkey = ["search@1"] # ERROR: Feature not allowed
  }
}

sandbox "ci" {
  project    = project.shop
  extensions = { redis = ["json@2"], postgres = ["vector@1"] } # ERROR: Feature not allowed
}

sandbox "empty" {
  project    = project.shop
  extensions = { redis = ["search@"] } # ERROR: Feature not allowed
}

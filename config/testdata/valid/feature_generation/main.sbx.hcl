# "search@2" asks for the Redis Search 2.x API; plain "search" takes any.
project "shop" {
  services   = ["redis", "valkey"]
  extensions = { redis = ["search@2"] }
}

sandbox "ci" {
  project    = project.shop
  extensions = { redis = ["search", "search@2"], valkey = ["search@2"] }
}

# Values that used to pass validate and fail at apply.
provider "docker" {
  memory_mb  = 1000000000000000 # ERROR: Invalid value
  pids_limit = 8                # ERROR: Invalid value
  storage    = "ramdisk"        # ERROR: Invalid storage
  image "postgres" {
    ref = "--privileged" # ERROR: Invalid image reference
  }
  image "redis" {
    ref = "sandboxer.local/redis:7"
    modules = {
      search = "/usr/lib/redis/modules/redisearch.so\n--enable-debug-command yes" # ERROR: Invalid module path
      json   = "/usr/lib/redis/modules/re json.so"                             # ERROR: Invalid module path
      bloom  = "modules/redisbloom.so"                                         # ERROR: Invalid module path
    }
  }
}

project "p" {
  services = ["postgres"]
}

sandbox "nanosecond" {
  project = project.p
  ttl     = "1ns" # ERROR: Invalid ttl
}

sandbox "zero_seconds" {
  project = project.p
  ttl     = "0s" # ERROR: Invalid ttl
}

sandbox "too_long" {
  project = project.p
  ttl     = "31d" # ERROR: Invalid ttl
}

sandbox "huge" {
  project = project.p
  ttl     = "999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999x" # ERROR: Invalid ttl
}

sandbox "never" {
  project = project.p
  ttl     = "0"
}

sandbox "bounds" {
  for_each = toset(["1m", "30d", "720h"])
  project  = project.p
  ttl      = each.key
}

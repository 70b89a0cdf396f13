project "dupes" {
  services = ["redis", "postgres", "redis"]
  extensions = {
    postgres = ["vector", "citext", "vector", "citext"]
    redis    = []
  }
}

sandbox "ci" {
  project    = project.dupes
  services   = ["redis", "postgres", "postgres"]
  extensions = { postgres = ["citext", "pg_trgm"], redis = ["json", "json"] }
}

# A project that declares no extensions stays bare: every opted service is
# present with no features.
project "plain" {
  services = ["postgres", "redis"]
}

sandbox "ci" {
  project  = project.plain
  services = ["redis"]
}

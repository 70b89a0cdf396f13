provider "docker" {
  networks        = ["agents"]
  publish_address = "10.0.0.5"
  tls             = false
}

project "p" {
  services = ["postgres", "redis"]
}

sandbox "s" {
  project  = project.p
  networks = ["ci", "agents"]
}

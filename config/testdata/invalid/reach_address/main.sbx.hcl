provider "docker" {
  publish_address = "localhost" # ERROR: Invalid publish address
  advertise_host  = "300.1.2.3" # ERROR: Invalid advertise_host
  networks        = "agents"    # ERROR: Incorrect attribute value type
}

project "p" {
  services = ["postgres"]
}

sandbox "s" {
  project = project.p
}

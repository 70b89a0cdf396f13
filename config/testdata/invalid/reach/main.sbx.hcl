provider "docker" {
  networks        = ["agents", "bridge", "-ci"] # ERROR: Invalid network name # ERROR: Invalid network name
  publish_address = "0.0.0.0"
  tls             = false               # ERROR: TLS required on a public address
  advertise_host  = "https://db.example:5432" # ERROR: Invalid advertise_host
}

project "p" {
  services = ["postgres"]
}

sandbox "s" {
  project  = project.p
  networks = ["ok", "has space"] # ERROR: Invalid network name
}

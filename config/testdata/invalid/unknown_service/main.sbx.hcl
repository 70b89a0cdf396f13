project "billing" {
  services = ["postgres", "mongodb"] # ERROR: Unknown service
  extensions = {
    couchdb = ["x"] # ERROR: Unknown service
  }
}

sandbox "ci" {
  project  = project.billing
  services = ["postgres", "kafka"] # ERROR: Unknown service
}

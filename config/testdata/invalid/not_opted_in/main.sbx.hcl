project "billing" {
  services = ["postgres"]
  extensions = {
    redis = ["search"] # ERROR: Extensions for a service not opted in
  }
}

sandbox "ci" {
  project    = project.billing
  services   = ["postgres", "redis"] # ERROR: Service not opted in by project
  extensions = { redis = [] }        # ERROR: Extensions for a service not opted in
}

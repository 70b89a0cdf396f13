project "billing" {
  services = ["postgres", "mysql"] # ERROR: Unknown service
  extensions = {
    mongodb = ["x"] # ERROR: Unknown service
  }
}

sandbox "ci" {
  project  = project.billing
  services = ["postgres", "kafka"] # ERROR: Unknown service
}

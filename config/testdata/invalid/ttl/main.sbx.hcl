project "p" {
  services = ["postgres"]
}

sandbox "forever" {
  project = project.p
  ttl     = "forever" # ERROR: Invalid ttl
}

sandbox "negative" {
  project = project.p
  ttl     = "-4h" # ERROR: Invalid ttl
}

sandbox "empty" {
  project = project.p
  ttl     = "" # ERROR: Invalid ttl
}

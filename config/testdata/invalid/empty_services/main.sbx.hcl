project "p" {
  services = [] # ERROR: Empty services list
}

project "q" {
  services = ["postgres"]
}

sandbox "s" {
  project  = project.q
  services = [] # ERROR: Empty services list
}

project "nulled" {
  services = null # ERROR: Empty services list
}

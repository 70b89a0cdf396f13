project "p" {
  services = ["postgres"]
}

sandbox "list" {
  project  = project.p
  for_each = ["a", "b"] # ERROR: Invalid for_each argument
}

sandbox "string" {
  project  = project.p
  for_each = "a" # ERROR: Invalid for_each argument
}

sandbox "null" {
  project  = project.p
  for_each = null # ERROR: Invalid for_each argument
}

sandbox "empty_key" {
  project  = project.p
  for_each = { "" = 1 } # ERROR: Invalid for_each argument
}

sandbox "nested_set" {
  project  = project.p
  for_each = toset([["a"]]) # ERROR: Invalid for_each argument
}

sandbox "template" {
  project   = project.p
  on_demand = true
  for_each  = { a = 1 } # ERROR: Invalid combination of for_each and on_demand
}

sandbox "bad_instances" {
  project  = project.p
  for_each = { a = "postgres", b = "redis" }
  services = [each.value] # ERROR: Service not opted in by project
}

name = "top-level arguments are not allowed" # ERROR: Unsupported argument

project "billing" {
  services = ["postgres"]
  colour   = "red" # ERROR: Unsupported argument
}

widget "x" {} # ERROR: Unsupported block type

sandbox "ci" { # ERROR: Missing required argument
  services = ["postgres"]
}

sandbox "nested" {
  project = project.billing
  extra {} # ERROR: Unsupported block type
}

project "bad name" { # ERROR: Invalid project name
  services = ["postgres"]
}

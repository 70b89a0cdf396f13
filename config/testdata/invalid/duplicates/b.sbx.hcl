variable "x" { # ERROR: Duplicate variable block
  default = 2
}

locals {
  l = 2 # ERROR: Duplicate local value definition
}

provider "docker" {} # ERROR: Duplicate provider block

project "billing" { # ERROR: Duplicate project block
  services = ["redis"]
}

sandbox "ci" { # ERROR: Duplicate sandbox block
  project = project.billing
}

output "o" { # ERROR: Duplicate output block
  value = 2
}

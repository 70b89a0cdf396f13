variable "x" {
  default = 1
}

locals {
  l = 1
}

provider "docker" {
  image "postgres" { ref = "postgres:17" }
  image "postgres" { ref = "postgres:16" } # ERROR: Duplicate image block
}

project "billing" {
  services = ["postgres"]
  extensions = {
    postgres   = ["vector"]
    "postgres" = ["postgis"] # ERROR: Duplicate map key
  }
}

sandbox "ci" {
  project = project.billing
}

output "o" {
  value = 1
}

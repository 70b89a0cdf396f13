variable "team" {
  default = "billing"
}

locals {
  base = ["postgres"]
}

locals {
  # Declared before what it uses: order of declaration does not matter.
  services = concat(local.base, local.extra)
  extra    = var.team == "billing" ? ["redis"] : []
  name     = "${upper(var.team)}-${length(local.services)}"
  pg_feats = distinct(flatten([["vector"], ["vector", "postgis"]]))
}

project "billing" {
  services   = local.services
  extensions = { postgres = local.pg_feats }
}

sandbox "ci" {
  project = project.billing
}

output "label" {
  value = local.name
}

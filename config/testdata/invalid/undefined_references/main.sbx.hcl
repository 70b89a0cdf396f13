locals {
  a = var.missing             # ERROR: Reference to undeclared input variable
  b = local.nope              # ERROR: Reference to undeclared local value
  c = each.key                # ERROR: Reference to "each" in context without for_each
  d = sandbox.ci.postgres.url # ERROR: Invalid reference
  e = project.billing.name    # ERROR: Invalid reference
  f = foo.bar                 # ERROR: Invalid reference
}

project "billing" {
  services = ["postgres"]
}

sandbox "ci" {
  project = project.billing
  ttl     = each.value # ERROR: Reference to "each" in context without for_each
}

sandbox "other" {
  project = project.nobody # ERROR: Reference to undeclared project
}

sandbox "computed" {
  project = "billing" # ERROR: Invalid project reference
}

sandbox "expr" {
  project  = project.billing
  services = project.accounts.services # ERROR: Reference to undeclared project
}

sandbox "each_attr" {
  project  = project.billing
  for_each = toset(["a"])
  ttl      = each.name # ERROR: Invalid "each" attribute
}

output "x" {
  value = sandbox.nope.postgres.url # ERROR: Reference to undeclared sandbox
}

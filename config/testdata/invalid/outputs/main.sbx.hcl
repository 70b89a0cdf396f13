project "p" {
  services = ["postgres", "redis"]
}

sandbox "ci" {
  project  = project.p
  services = ["postgres"]
}

sandbox "fleet" {
  project  = project.p
  for_each = toset(["a", "b"])
}

output "no_sandbox" {
  value = sandbox.nope.postgres.url # ERROR: Reference to undeclared sandbox
}

output "not_requested" {
  value = sandbox.ci.redis.url # ERROR: Reference to a service the sandbox does not request
}

output "bad_attr" {
  value = sandbox.ci.postgres.secret # ERROR: Unsupported sandbox attribute
}

output "no_key" {
  value = sandbox.fleet.postgres.url # ERROR: Missing sandbox instance key
}

output "bad_key" {
  value = sandbox.fleet["c"].postgres.url # ERROR: Reference to undeclared sandbox instance
}

output "unexpected_key" {
  value = sandbox.ci["a"].postgres.url # ERROR: Unexpected sandbox instance key
}

output "type_error" {
  value = upper(sandbox.ci.postgres) # ERROR: Invalid function argument
}

output "missing_value" { # ERROR: Missing required argument
  sensitive = true
}

output "each" {
  value = each.key # ERROR: Reference to "each" in context without for_each
}

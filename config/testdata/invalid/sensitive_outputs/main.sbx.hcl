project "p" {
  services = ["postgres", "redis"]
}

sandbox "s" {
  project = project.p
}

output "pw" {
  value = sandbox.s.redis.password # ERROR: Output refers to sensitive values
}

output "interpolated" {
  value = "x-${upper(sandbox.s.postgres.url)}" # ERROR: Output refers to sensitive values
}

output "whole" {
  value = sandbox.s # ERROR: Output refers to sensitive values
}

output "fine" {
  value = "${sandbox.s.postgres.host}:${sandbox.s.postgres.port}"
}

output "marked_fine" {
  value     = sandbox.s
  sensitive = true
}

variable "branches" {
  type    = set(string)
  default = ["main", "release"]
}

project "api" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["citext"] }
}

sandbox "branch" {
  for_each = var.branches
  project  = project.api
  services = ["postgres"]
  ttl      = each.key == "main" ? "0" : "2d"
}

output "main_url" {
  value     = sandbox.branch["main"].postgres.url
  sensitive = true
}

output "all_hosts" {
  value = { for k, s in sandbox.branch : k => s.postgres.host }
}

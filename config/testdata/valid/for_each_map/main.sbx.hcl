project "shop" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["uuid-ossp"]
  }
}

sandbox "svc" {
  project = project.shop
  for_each = {
    search = { services = ["redis"], features = ["search", "json"] }
    orders = { services = ["postgres"], features = [] }
  }
  services   = each.value.services
  extensions = { (each.value.services[0]) = each.value.features }
  ttl        = "90m"
}

output "search_url" {
  value     = sandbox.svc["search"].redis.url
  sensitive = true
}

sandbox "ci" {
  project = project.billing
  ttl     = var.ttl
}

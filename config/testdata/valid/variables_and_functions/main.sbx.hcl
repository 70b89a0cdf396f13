variable "services" {
  type        = list(string)
  default     = ["Postgres ", " REDIS"]
  description = "Services, tidied by the locals below."
}

variable "memory" {
  type    = number
  default = 2048
  validation {
    condition     = var.memory >= 512
    error_message = "At least 512 MB."
  }
}

variable "settings" {
  type = object({
    ttl   = optional(string, "8h")
    extra = optional(map(list(string)), {})
  })
  default = {}
}

variable "password" {
  type      = string
  default   = "not-a-secret"
  sensitive = true
}

locals {
  services = [for s in var.services : lower(trimspace(s))]
  features = merge({ postgres = ["vector"] }, var.settings.extra)
}

provider "docker" {
  host       = "unix:///var/run/docker.sock"
  memory_mb  = var.memory
  pids_limit = 256
  image "postgres" {
    ref = format("%s:%d", "postgres", 16)
  }
  image "redis" {
    ref     = "redis/redis-stack-server:7.4.0-v1"
    modules = { search = "/opt/redis-stack/lib/redisearch.so", json = "/opt/redis-stack/lib/rejson.so" }
  }
}

project "tidy" {
  services   = local.services
  extensions = local.features
}

sandbox "ci" {
  project  = project.tidy
  services = [for s in project.tidy.services : s if contains(["postgres"], s)]
  ttl      = var.settings.ttl
}

output "summary" {
  value       = join(",", keys(sandbox.ci))
  description = "Services of the ci sandbox."
}

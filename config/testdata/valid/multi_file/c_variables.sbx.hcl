variable "ttl" {
  default = "30m"
}

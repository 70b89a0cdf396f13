project "billing" {
  services = ["postgres"]
}

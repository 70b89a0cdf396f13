project "p" {
  services = ["postgres",, "redis"] # ERROR: Invalid expression
}

provider "docker" {
  ready_timeout = "soon" # ERROR: Invalid ready_timeout
}

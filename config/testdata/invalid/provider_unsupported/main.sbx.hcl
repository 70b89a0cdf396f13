provider "aws" { # ERROR: Unsupported provider
  region = "eu-west-1"
}

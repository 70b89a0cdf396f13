package docker

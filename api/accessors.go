package api

import (
	"strconv"
	"strings"
)

// The accessors read one service's credentials out of Env by the names
// of SPEC §6 (<PREFIX><SERVICE>_URL, …), whatever the prefix: they match
// the suffix, so a request made with a custom env prefix reads the same.

// URL is the service's connection URL (with the password), "" if the
// sandbox does not run it.
func (s *Sandbox) URL(service string) string { return s.envValue(service, "URL") }

// Host is the service's host.
func (s *Sandbox) Host(service string) string { return s.envValue(service, "HOST") }

// Port is the service's port, 0 if unknown.
func (s *Sandbox) Port(service string) int {
	n, _ := strconv.Atoi(s.envValue(service, "PORT"))
	return n
}

// User is the handed-out user.
func (s *Sandbox) User(service string) string { return s.envValue(service, "USER") }

// Password is the handed-out password.
func (s *Sandbox) Password(service string) string { return s.envValue(service, "PASSWORD") }

// Database is the PostgreSQL database name.
func (s *Sandbox) Database(service string) string { return s.envValue(service, "DB") }

func (s *Sandbox) envValue(service, attr string) string {
	suffix := strings.ToUpper(service) + "_" + attr
	for name, v := range s.Env {
		if strings.HasSuffix(name, suffix) {
			return v
		}
	}
	return ""
}

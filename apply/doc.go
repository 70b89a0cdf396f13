// Package apply carries a plan out through a Provider: it refreshes cached
// instances, creates and deletes them in dependency order (new before old),
// and commits each finished instance to state at once. It never decides
// what to do — the plan did — and it never prints: progress goes through
// the Hook interface so the CLI, the HTTP server and tests can all listen.
package apply

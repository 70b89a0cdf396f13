// Package cli is sandboxer's command line: one file per command, each with an
// options struct bound to its flags and a run function that tests call
// directly. It wires configuration, state, planning, apply and rendering
// together; it holds no behaviour of its own beyond that wiring, and exit
// codes are decided in one place (exitcode.go).
package cli

// Package plugin runs a runtime's provider in a program of its own and
// talks to it over the program's standard input and output, as Terraform
// runs its providers: the kubernetes runtime lives in sandboxer-kubernetes,
// so the sandboxer binary links none of client-go. Go initialises every
// linked package when a process starts, and client-go's packages cost
// every command (a plan of Docker sandboxes included) about 9 ms and
// 9 MiB here; now only a configuration that uses the runtime starts it.
//
// Rules it keeps:
//   - The client is the provider to its caller: the same methods, the same
//     error texts, byte for byte, and the sentinels apply.ErrNotFound and
//     apply.ErrEngine and the context errors still found by errors.Is. A
//     cancelled or expired context reaches the provider's own context, so
//     it cleans up as it would in process.
//   - The wire is JSON-RPC (net/rpc/jsonrpc) over the two pipes; nil and
//     empty slices and maps arrive as they left. Secrets cross it only in
//     the results that hold them anyway (credentials), never in errors or
//     on standard error.
//   - A protocol version is exchanged first: a program from another build
//     is refused with a message that says so, before anything is done.
//   - The program ends when its standard input closes (Client.Close, or
//     the caller's process ending), after closing its provider.
package plugin

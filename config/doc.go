// Package config turns a directory of *.sbx.hcl files into a typed,
// validated model: variables with their final values, the docker provider
// with defaults applied, projects, sandbox blocks, their expanded instances
// with effective service and feature sets, and outputs.
//
// Decoding runs in phases, as Terraform's configs package does: variables
// (defaults, SBX_VAR_ environment, --var-file, --var), then locals, then the
// evaluation context, then provider, projects, sandboxes and outputs. The
// built-in Catalog is the security boundary: every service and feature a
// configuration names is checked against it here, at the model boundary.
//
// Large configurations load on every core, but never differently from a
// load on one: each file is parsed in pieces that must join into exactly
// the body hcl's whole-file parse gives, else the file is parsed whole
// (parse.go); a piece written in the plain subset of HCL is parsed by a
// faster parser that builds hcl's own syntax tree or declines, and hcl
// parses what it declines (fastparse.go); only sandbox blocks whose
// decoding touches nothing shared (literal arguments) are decoded
// concurrently, their results then taken in block order
// (sandbox_parallel.go); and such a block whose arguments are, text for
// text, those of one that decoded without a diagnostic gets a renamed
// copy of that result (sandbox_memo.go). Constant arguments are read from
// the syntax tree as hcl would evaluate them (literalvalue.go), and a
// block's content is taken without hcl's bookkeeping when hcl would
// report nothing (content.go). The evaluation limits (limits.go,
// loopwork.go) apply to every expression that can loop or call a
// function; literals, which can do neither, skip the walks (literal.go).
//
// Problems are reported as hcl.Diagnostics with source ranges and are never
// turned into strings in this package; the CLI renders them. Load always
// returns a non-nil *Config whose Dir, Sources and Files are populated, so
// errors can be rendered with snippets even when loading failed; the other
// fields of a Config that came with error diagnostics are partial and must
// not be used.
//
// This package must never do I/O beyond reading the configuration directory
// and the --var-file files it is given, never read the process environment
// or flags directly (they come in through Input), and never touch state or
// Docker.
package config

// Package tenants reads serve's tenants file (serve --tenants): who may
// call the API and MCP, with which token (kept only as a SHA-256 hash),
// on which blocks, under which quotas. It never holds a token in the
// clear and never puts one, or a hash, in an error.
package tenants

// Package image holds no code: it is the recipe of sandboxer's own image
// (Dockerfile and build.sh, which make image runs) and the tests of the
// image it makes: what it holds and runs as (image_test.go), and serve
// running in it as deploy/helm's chart runs it (serve_test.go).
//
// What it must never do: be imported, or create images of its own in a
// test (the test checks the one make image built).
package image

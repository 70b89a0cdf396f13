// Package image holds no code: it is the recipe of sandboxer's own image
// (Dockerfile and build.sh, which make image runs) and the test of the
// image it makes (image_test.go).
//
// What it must never do: be imported, or create images of its own in a
// test (the test checks the one make image built).
package image

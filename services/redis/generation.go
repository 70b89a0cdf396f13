package redis

import (
	"strconv"
	"strings"
)

// FeatureGeneration is the API generation of feature's module at version
// (contract.GenerationDetector). Only search has two: RediSearch 1.x
// (Debian's redis-redisearch, reported as "ft" 1.2.0) takes FT.ADD and
// knows no ON HASH PREFIX — FT.CREATE … ON HASH PREFIX 1 doc: answers
// OK there and indexes nothing —, while RediSearch 2.x and redis:8's
// built-in search (reported as "search" 2.x and 8.x) follow hashes by
// prefix: the Redis Search 2.x API. The version tells them apart, so an
// image is judged by the module it loads, whatever its name.
func (Service) FeatureGeneration(feature, version string) string {
	if feature != "search" {
		return ""
	}
	return SearchGeneration(version)
}

// SearchGeneration is the API generation of a Redis search module at
// version ("1.2.0" → "1", "2.8.4" or "8.0.2" → "2"); "" for a version
// it cannot read.
func SearchGeneration(version string) string {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	switch {
	case err != nil || n < 0:
		return ""
	case n < 2:
		return "1"
	default:
		return "2"
	}
}

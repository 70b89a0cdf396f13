package config

import (
	"slices"
	"sort"
	"strings"
)

// FeatureSet maps a service name to its sorted, de-duplicated feature list.
// A service present with an empty list is a bare service.
type FeatureSet map[string][]string

// Normalize returns a copy with every list sorted and de-duplicated.
func (f FeatureSet) Normalize() FeatureSet {
	out := make(FeatureSet, len(f))
	for svc, feats := range f {
		out[svc] = SortedUnique(feats)
	}
	return out
}

// Union returns a new set holding every service and feature of both.
func (f FeatureSet) Union(o FeatureSet) FeatureSet {
	out := make(FeatureSet, len(f)+len(o))
	for svc, feats := range f {
		out[svc] = append(out[svc], feats...)
	}
	for svc, feats := range o {
		out[svc] = append(out[svc], feats...)
	}
	// The lists are out's own copies: normalise them in place.
	for svc, feats := range out {
		sort.Strings(feats)
		if out[svc] = slices.Compact(feats); out[svc] == nil {
			out[svc] = []string{}
		}
	}
	return out
}

// UnionOnly is f.Union(o).Only(services), without the intermediate set.
// A list that is the whole union, already sorted and unique and not nil
// (a project's standing list that the sandbox does not add to), is shared
// rather than copied: the sets of instances are read only.
func (f FeatureSet) UnionOnly(o FeatureSet, services []string) FeatureSet {
	out := make(FeatureSet, len(services))
	for _, svc := range services {
		if own, ok := soleList(f[svc], o[svc]); ok {
			out[svc] = own
			continue
		}
		feats := make([]string, 0, len(f[svc])+len(o[svc]))
		feats = append(append(feats, f[svc]...), o[svc]...)
		sort.Strings(feats)
		out[svc] = slices.Compact(feats)
	}
	return out
}

// soleList is the one of a and b that is not empty, when the other is and
// it is sorted, unique and not nil: their union, as it is.
func soleList(a, b []string) ([]string, bool) {
	if len(a) == 0 {
		a, b = b, a
	}
	if len(b) != 0 || a == nil {
		return nil, false
	}
	for i := 1; i < len(a); i++ {
		if a[i-1] >= a[i] {
			return nil, false
		}
	}
	return a, true
}

// Only returns the subset of f for the given services; services missing
// from f appear bare.
func (f FeatureSet) Only(services []string) FeatureSet {
	out := make(FeatureSet, len(services))
	for _, svc := range services {
		out[svc] = slices.Clone(f[svc])
		if out[svc] == nil {
			out[svc] = []string{}
		}
	}
	return out
}

// Missing lists, per service, the features of want that f does not hold.
// Services absent from f are reported with all their features. A feature
// asked for without a generation is held by any generation of it
// ("search@2" holds "search"), one with a generation only by the same.
func (f FeatureSet) Missing(want FeatureSet) FeatureSet {
	out := FeatureSet{}
	for svc, feats := range want {
		have := f[svc]
		for _, ft := range feats {
			if !slices.ContainsFunc(have, func(h string) bool { return covers(h, ft) }) {
				out[svc] = append(out[svc], ft)
			}
		}
	}
	return out.Normalize()
}

// Services returns the sorted service names of f.
func (f FeatureSet) Services() []string {
	out := make([]string, 0, len(f))
	for svc := range f {
		out = append(out, svc)
	}
	sort.Strings(out)
	return out
}

// String renders the set compactly, e.g. postgres[pg_trgm,vector] redis[].
func (f FeatureSet) String() string {
	var b strings.Builder
	for i, svc := range f.Services() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(svc)
		b.WriteByte('[')
		for j, ft := range f[svc] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ft)
		}
		b.WriteByte(']')
	}
	return b.String()
}

// SortedUnique returns a sorted copy of in without duplicates; never nil.
func SortedUnique(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}

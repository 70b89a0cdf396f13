package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sandboxer/sandboxer/config"
)

// Capabilities is what the provider found each image can provide, by
// service and image (the Ref of a change's After.Images, "" for a change
// without images). It is observed data, like Observed: the provider
// inspects the images and the plan only compares. An image missing from it
// was not inspected (refresh off, or a provider that cannot tell) and is
// not checked.
type Capabilities map[ImageUse]ImageCapabilities

// ImageCapabilities is what one image provides.
type ImageCapabilities struct {
	// Image is the image reference, for messages.
	Image string `json:"image"`
	// Features maps each feature the image can provide to its version
	// ("" when the image does not say).
	Features map[string]string `json:"features"`
	// Unusable says, per feature, why one the image seems to offer cannot
	// be used (a module that fails to load), for messages.
	Unusable map[string]string `json:"unusable,omitempty"`
	// Hint says how to get a missing feature with this kind of image.
	Hint string `json:"hint,omitempty"`
}

// Shortfall is one planned instance whose images cannot provide some of
// the features it is to be provisioned with.
type Shortfall struct {
	Addr    config.Address
	Service string
	Image   string
	// Missing lists the features the image lacks, sorted.
	Missing []string
	// Why holds the reason for a missing feature the image seems to offer.
	Why map[string]string
	// Provided lists what the image does provide (feature and version),
	// sorted, so the message can say what is there instead.
	Provided []string
	Hint     string
}

// UnprovidableError lists every shortfall of a plan at once, so one run
// shows everything to fix. Nothing has been created when it is returned.
type UnprovidableError struct {
	Shortfalls []Shortfall // sorted by address, then service
}

// Count is the number of missing features over all shortfalls.
func (e *UnprovidableError) Count() int {
	n := 0
	for _, s := range e.Shortfalls {
		n += len(s.Missing)
	}
	return n
}

func (e *UnprovidableError) Error() string {
	parts := make([]string, len(e.Shortfalls))
	for i, s := range e.Shortfalls {
		parts[i] = fmt.Sprintf("%s: %s image %q does not provide %s", s.Addr, s.Service, s.Image, quoteList(s.Missing))
	}
	return fmt.Sprintf("the images cannot provide %d requested feature(s); nothing was created: %s",
		e.Count(), strings.Join(parts, "; "))
}

// Unprovidable checks every create and replace of the plan against what
// the images provide and returns an *UnprovidableError listing every
// missing feature of every instance and service, or nil. Like Build it is
// pure.
func (p *Plan) Unprovidable(caps Capabilities) error {
	return Unprovidable(p.Changes, caps)
}

// Unprovidable is Plan.Unprovidable for a list of changes (the on-demand
// path plans one change at a time).
func Unprovidable(changes []*Change, caps Capabilities) error {
	var out []Shortfall
	for _, c := range changes {
		if (c.Action != Create && c.Action != CreateThenDelete) || c.After == nil {
			continue
		}
		for _, svc := range c.After.Features.Services() {
			ic, known := caps[ImageUse{Service: svc, Ref: c.After.Images[svc], Runtime: c.After.Runtime}]
			if !known {
				continue
			}
			var missing []string
			for _, f := range c.After.Features[svc] {
				if _, ok := ic.Features[f]; !ok {
					missing = append(missing, f)
				}
			}
			if len(missing) == 0 {
				continue
			}
			sort.Strings(missing)
			s := Shortfall{Addr: c.Addr, Service: svc, Image: ic.Image, Missing: missing,
				Provided: provided(ic.Features), Hint: ic.Hint}
			for _, f := range missing {
				if why, ok := ic.Unusable[f]; ok {
					if s.Why == nil {
						s.Why = map[string]string{}
					}
					s.Why[f] = why
				}
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool {
		ai, aj := out[i].Addr.String(), out[j].Addr.String()
		if ai != aj {
			return ai < aj
		}
		return out[i].Service < out[j].Service
	})
	return &UnprovidableError{Shortfalls: out}
}

// provided renders an image's features as sorted "name version" items.
func provided(features map[string]string) []string {
	out := make([]string, 0, len(features))
	for f, v := range features {
		if v != "" {
			f += " " + v
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

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
	// Generations maps a provided feature that comes in API generations
	// to the one the image has ("search": "1" for RediSearch 1.2), as the
	// service detects it from the module's reported version; a feature
	// absent from it has one API or an unknown one.
	Generations map[string]string `json:"generations,omitempty"`
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
		// A generation the image lacks: say which one it has, for a
		// caller that sees only this text (the API, MCP).
		for _, f := range s.Missing {
			if name, gen := config.ParseFeature(f); gen != "" && s.Why[f] != "" {
				parts[i] += fmt.Sprintf(" (%s: %s)", name, s.Why[f])
			}
		}
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
			var wrongGen map[string]string
			for _, f := range c.After.Features[svc] {
				name, gen := config.ParseFeature(f)
				if _, ok := ic.Features[name]; !ok {
					missing = append(missing, f)
					continue
				}
				// A generation asked for must be the one the image has; an
				// image that does not say is not checked, as an image that
				// was not inspected.
				if has, known := ic.Generations[name]; gen != "" && known && has != gen {
					missing = append(missing, f)
					if wrongGen == nil {
						wrongGen = map[string]string{}
					}
					wrongGen[f] = fmt.Sprintf("the image's %s is API generation %s (version %s), not %s",
						name, has, ic.Features[name], gen)
				}
			}
			if len(missing) == 0 {
				continue
			}
			sort.Strings(missing)
			s := Shortfall{Addr: c.Addr, Service: svc, Image: ic.Image, Missing: missing,
				Provided: ic.provided(), Hint: ic.Hint}
			for _, f := range missing {
				why, ok := ic.Unusable[config.FeatureName(f)]
				if w, gen := wrongGen[f]; gen {
					why, ok = w, true
				}
				if ok {
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

// NoteGenerations records on every create and replace of changes the API
// generation each of its features has on the image it will run
// (Sandbox.Generations), for the plan to show. Like Unprovidable it only
// reads caps; images not in caps are left unsaid.
func NoteGenerations(changes []*Change, caps Capabilities) {
	for _, c := range changes {
		if (c.Action != Create && c.Action != CreateThenDelete) || c.After == nil {
			continue
		}
		for _, svc := range c.After.Features.Services() {
			ic, known := caps[ImageUse{Service: svc, Ref: c.After.Images[svc], Runtime: c.After.Runtime}]
			if !known {
				continue
			}
			for _, f := range c.After.Features[svc] {
				name := config.FeatureName(f)
				g := ic.Generations[name]
				if g == "" {
					continue
				}
				if c.After.Generations == nil {
					c.After.Generations = map[string]map[string]string{}
				}
				if c.After.Generations[svc] == nil {
					c.After.Generations[svc] = map[string]string{}
				}
				c.After.Generations[svc][name] = g
			}
		}
	}
}

// provided renders an image's features as sorted "name version" items,
// with the API generation of a feature that has one ("search 1.2.0
// (API generation 1)").
func (ic ImageCapabilities) provided() []string {
	out := make([]string, 0, len(ic.Features))
	for f, v := range ic.Features {
		item := f
		if v != "" {
			item += " " + v
		}
		if g := ic.Generations[f]; g != "" {
			item += " (API generation " + g + ")"
		}
		out = append(out, item)
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

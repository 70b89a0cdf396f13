package sandboxer

import (
	"context"
	"slices"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// FeatureList is Features's answer.
type FeatureList = api.FeatureList

// Features lists, for each service the configuration's projects may use
// (every service of the catalog when none names one), the allowlist and
// what the configured image provides, with versions. An image that cannot
// be inspected is reported on its service, not as a failure of the call.
func (s *Sandboxer) Features(ctx context.Context) (*FeatureList, error) {
	var services []string
	for _, p := range s.cfg.Projects {
		for _, svc := range p.Services {
			if !slices.Contains(services, svc) {
				services = append(services, svc)
			}
		}
	}
	if len(services) == 0 {
		services = s.cat.Services()
	}
	slices.Sort(services)
	out := &FeatureList{Services: make([]api.ServiceFeatures, 0, len(services))}
	prov, connErr := s.prov.get(ctx)
	for _, svc := range services {
		sf := api.ServiceFeatures{Service: svc, Allowed: s.cat.Allowed(svc), Provided: map[string]string{}}
		for _, f := range sf.Allowed {
			if gens := s.cat.Generations(svc, f); len(gens) > 0 {
				if sf.Generable == nil {
					sf.Generable = map[string][]string{}
				}
				sf.Generable[f] = gens
			}
		}
		if connErr != nil {
			sf.Error = classify(connErr).Error()
			out.Services = append(out.Services, sf)
			continue
		}
		// The configured image, or with none the service's bare default
		// (a request for a packaged feature then runs the default image
		// that has it: config.DefaultImages).
		// On the runtime sandboxes go to by default.
		use := plan.ImageUse{Service: svc}
		if s.cfg.DefaultRuntime == config.RuntimeKubernetes {
			use.Runtime = config.RuntimeKubernetes
		}
		if img, err := s.cfg.ProviderFor(s.cfg.DefaultRuntime).ImageFor(svc, nil); err == nil {
			use.Ref = img.Ref
		}
		caps, err := prov.Check(ctx, []plan.ImageUse{use})
		if err != nil {
			sf.Error = classify(err).Error()
		} else if ic, ok := caps[use]; ok {
			sf.Image = ic.Image
			for f, v := range ic.Features {
				if slices.Contains(sf.Allowed, f) {
					sf.Provided[f] = v
					if g := ic.Generations[f]; g != "" {
						if sf.Generations == nil {
							sf.Generations = map[string]string{}
						}
						sf.Generations[f] = g
					}
				}
			}
		}
		out.Services = append(out.Services, sf)
	}
	return out, nil
}

package cli

import (
	"errors"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/plan"
)

// unprovidable renders a preflight's list of features the images cannot
// provide, or the plan's list of feature sets no default image provides
// (with each sandbox block's location when cfg is known), and returns
// errReported; any other error is returned as it is.
func unprovidable(f *Factory, err error, cfg *config.Config) error {
	var ue *plan.UnprovidableError
	var ne *plan.NoImageError
	if !errors.As(err, &ue) && !errors.As(err, &ne) {
		return err
	}
	var where func(string) (hcl.Range, bool)
	if cfg != nil {
		ranges := make(map[string]hcl.Range, len(cfg.Instances))
		for _, in := range cfg.Instances {
			ranges[in.Addr.String()] = in.DeclRange
		}
		where = func(addr string) (hcl.Range, bool) {
			if r, ok := ranges[addr]; ok {
				return r, true
			}
			// An on-demand instance: its block is the template.
			a, err := config.ParseAddress(addr)
			if err != nil {
				return hcl.Range{}, false
			}
			r, ok := ranges[a.Block().String()]
			return r, ok
		}
	}
	if ne != nil {
		views.NoImage(f.IO.Err, ne, where, f.ErrColor())
		return errReported
	}
	views.Unprovidable(f.IO.Err, ue, where, f.ErrColor())
	return errReported
}

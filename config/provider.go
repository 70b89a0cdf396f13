package config

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var providerBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "host"},
		{Name: "memory_mb"},
		{Name: "pids_limit"},
		// reach.go: user networks and where ports are published
		{Name: "networks"},
		{Name: "publish_address"},
		{Name: "advertise_host"},
		{Name: "tls"},
		{Name: "storage"},
		{Name: "ready_timeout"},
		{Name: "template"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "image", LabelNames: []string{"service"}}},
}

var imageBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "ref", Required: true},
		{Name: "modules"},
	},
}

// MaxReadyTimeout bounds ready_timeout.
const MaxReadyTimeout = 24 * time.Hour

// Provider defaults, used when the provider block or an attribute is absent.
const (
	DefaultMemoryMB  = 1024
	DefaultPidsLimit = 1024
)

// Where PostgreSQL keeps its data directory (provider storage).
const (
	// StorageVolume: an anonymous volume removed with the container. The
	// idle cluster's pages are page cache the kernel can reclaim.
	StorageVolume = "volume"
	// StorageTmpfs: a tmpfs. The first start is faster (no filesystem
	// journal), and every page of the cluster is pinned memory.
	StorageTmpfs = "tmpfs"
)

// defaultImageRef is the bare image of a catalog service, run when the
// provider does not name one and the sandbox asks for no feature that
// needs another: the service's first row of DefaultImages (the table is
// in order of preference). A service without one runs the image of its
// own name.
func defaultImageRef(service string) string {
	if d := DefaultImagesOf(service); len(d) > 0 {
		return d[0].Ref
	}
	return service
}

// decodeProvider decodes the optional provider blocks, one per runtime,
// and fills in defaults, so Config.Provider and Config.Kubernetes are
// always set and name an image for every catalog service.
func (l *loader) decodeProvider(blocks hcl.Blocks) hcl.Diagnostics {
	p := &Provider{Runtime: RuntimeDocker, Images: map[string]Image{}, MemoryMB: DefaultMemoryMB, PidsLimit: DefaultPidsLimit, Publish: DefaultPublish(), Storage: StorageVolume}
	k := newKubernetesProvider()
	l.cfg.Provider, l.cfg.Kubernetes = p, k
	var diags hcl.Diagnostics
	seen := map[string]*hcl.Block{}
	for _, b := range blocks {
		label := b.Labels[0]
		if prev, ok := seen[label]; ok {
			diags = append(diags, duplicateDiag("provider", label, prev.DefRange, b.DefRange))
			continue
		}
		switch label {
		case RuntimeDocker:
			seen[label] = b
			diags = append(diags, l.decodeProviderBlock(p, b)...)
		case RuntimeKubernetes:
			seen[label] = b
			diags = append(diags, l.decodeKubernetesBlock(k, b)...)
		default:
			diags = append(diags, errorDiag("Unsupported provider",
				fmt.Sprintf("There is no provider named %q; sandboxer supports the \"docker\" and \"kubernetes\" providers.", label),
				b.LabelRanges[0]))
		}
	}
	l.cfg.DefaultRuntime = RuntimeDocker
	if seen[RuntimeKubernetes] != nil && seen[RuntimeDocker] == nil {
		l.cfg.DefaultRuntime = RuntimeKubernetes
	}
	for _, prov := range []*Provider{p, k} {
		for _, svc := range l.cat.Services() {
			if _, ok := prov.Images[svc]; !ok {
				prov.Images[svc] = Image{Ref: defaultImageRef(svc), Default: true}
			}
		}
	}
	return diags
}

func (l *loader) decodeProviderBlock(p *Provider, b *hcl.Block) hcl.Diagnostics {
	p.DeclRange = b.DefRange
	content, diags := b.Body.Content(providerBlockSchema)
	sc := scope{locals: true}
	if attr, ok := content.Attributes["host"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if s, ok, more := typed(v, attr.Expr, cty.String, "host"); ok {
			p.Host = s.AsString()
		} else {
			diags = append(diags, more...)
		}
	}
	diags = append(diags, l.decodeLimitsAndStorage(p, content, sc)...)
	if attr, ok := content.Attributes["ready_timeout"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if s, ok, more := typed(v, attr.Expr, cty.String, "ready_timeout"); ok {
			d, err := time.ParseDuration(s.AsString())
			if err != nil || d <= 0 || d > MaxReadyTimeout {
				diags = append(diags, errorDiag("Invalid ready_timeout",
					fmt.Sprintf("ready_timeout = %q: want a duration such as \"3m\" (at most %s): how long a provision waits for each service to answer, before it scales with the machine's load", s.AsString(), MaxReadyTimeout),
					attr.Expr.Range()))
			} else {
				p.ReadyTimeout = d
			}
		} else {
			diags = append(diags, more...)
		}
	}
	if attr, ok := content.Attributes["template"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if bv, ok, more := typed(v, attr.Expr, cty.Bool, "template"); ok {
			p.NoTemplate = bv.False()
		} else {
			diags = append(diags, more...)
		}
	}
	if attr, ok := content.Attributes["networks"]; ok {
		nets, more := l.networkList(attr, sc)
		diags = append(diags, more...)
		p.Networks = nets
	}
	diags = append(diags, l.decodePublish(p, content, sc)...)
	diags = append(diags, l.decodeImageBlocks(p, content.Blocks)...)
	return diags
}

// decodeLimitsAndStorage reads memory_mb, pids_limit and storage, which
// every runtime takes.
func (l *loader) decodeLimitsAndStorage(p *Provider, content *hcl.BodyContent, sc scope) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range []string{"memory_mb", "pids_limit"} {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		lo, hi := int64(MinMemoryMB), int64(MaxMemoryMB)
		if name == "pids_limit" {
			lo, hi = MinPidsLimit, MaxPidsLimit
		}
		n, ok, more := l.boundedInt(attr, sc, lo, hi)
		diags = append(diags, more...)
		if !ok {
			continue
		}
		if name == "memory_mb" {
			p.MemoryMB = n
		} else {
			p.PidsLimit = n
		}
	}
	if attr, ok := content.Attributes["storage"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if s, ok, more := typed(v, attr.Expr, cty.String, "storage"); !ok {
			diags = append(diags, more...)
		} else if st := s.AsString(); st != StorageVolume && st != StorageTmpfs {
			diags = append(diags, errorDiag("Invalid storage",
				fmt.Sprintf("storage is %s; it must be %q (the default: PostgreSQL data on an anonymous volume, page cache the kernel can reclaim) or %q (a faster first start, with every page of the data held in memory).", quote(st), StorageVolume, StorageTmpfs),
				attr.Expr.Range()))
		} else {
			p.Storage = st
		}
	}
	return diags
}

// decodeImageBlocks reads a provider's image blocks, one per service.
func (l *loader) decodeImageBlocks(p *Provider, blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]hcl.Range{}
	for _, ib := range blocks {
		svc := ib.Labels[0]
		if err := l.cat.CheckService(svc); err != nil {
			diags = append(diags, catalogDiag(err, ib.LabelRanges[0]))
			continue
		}
		if prev, ok := seen[svc]; ok {
			diags = append(diags, duplicateDiag("image", svc, prev, ib.DefRange))
			continue
		}
		seen[svc] = ib.DefRange
		img, more := l.decodeImageBlock(svc, ib)
		diags = append(diags, more...)
		p.Images[svc] = img
	}
	return diags
}

func (l *loader) decodeImageBlock(svc string, b *hcl.Block) (Image, hcl.Diagnostics) {
	img := Image{Ref: defaultImageRef(svc)}
	content, diags := b.Body.Content(imageBlockSchema)
	sc := scope{locals: true}
	if attr, ok := content.Attributes["ref"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		s, ok, more := typed(v, attr.Expr, cty.String, "ref")
		diags = append(diags, more...)
		if ok && s.AsString() == "" {
			diags = append(diags, errorDiag("Invalid image reference", "The image reference must not be empty.", attr.Expr.Range()))
		} else if ok {
			if err := CheckImageRef(s.AsString()); err != nil {
				diags = append(diags, errorDiag("Invalid image reference",
					upperFirst(err.Error())+`. Write a reference as Docker does, such as "postgres:17" or "registry.example.com/team/redis:7".`, attr.Expr.Range()))
			} else {
				img.Ref = s.AsString()
			}
		}
	}
	if attr, ok := content.Attributes["modules"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		items, _, more := mapItems(v, attr.Expr, cty.String, "modules")
		diags = append(diags, more...)
		for _, it := range items {
			// A module can only switch on a feature the allowlist permits.
			if err := l.cat.CheckFeature(svc, it.Key); err != nil {
				diags = append(diags, catalogDiag(err, it.KeyRange))
				continue
			}
			// A module is one file whatever API it speaks: which generation
			// it has is read from it when the image is inspected.
			if name := FeatureName(it.Key); name != it.Key {
				diags = append(diags, errorDiag("Invalid module feature",
					fmt.Sprintf("A module is named by its feature alone (%q): its API generation is read from the module when the image is inspected, so %q cannot be chosen here. Ask for the generation in extensions instead (%s = [%q]).", name, it.Key, svc, it.Key),
					it.KeyRange))
				continue
			}
			if it.Value.IsNull() {
				diags = append(diags, errorDiag("Invalid module path",
					fmt.Sprintf("The module path for feature %q must be a non-empty path inside the image.", it.Key), it.ValueExpr.Range()))
				continue
			}
			if err := CheckModulePath(it.Value.AsString()); err != nil {
				diags = append(diags, errorDiag("Invalid module path",
					fmt.Sprintf("%s. The module path for feature %q must be an absolute path inside the image, such as \"/usr/lib/redis/modules/redisearch.so\".", upperFirst(err.Error()), it.Key), it.ValueExpr.Range()))
				continue
			}
			if img.Modules == nil {
				img.Modules = map[string]string{}
			}
			img.Modules[it.Key] = it.Value.AsString()
		}
	}
	return img, diags
}

// boundedInt evaluates an attribute that must be a whole number from lo
// to hi.
func (l *loader) boundedInt(attr *hcl.Attribute, sc scope, lo, hi int64) (int64, bool, hcl.Diagnostics) {
	v, diags := l.ev.eval(attr.Expr, sc)
	n, ok, more := typed(v, attr.Expr, cty.Number, attr.Name)
	diags = append(diags, more...)
	if !ok {
		return 0, false, diags
	}
	i, acc := n.AsBigFloat().Int64()
	if acc != 0 || i < lo || i > hi {
		return 0, false, append(diags, errorDiag("Invalid value",
			fmt.Sprintf("%q must be a whole number from %d to %d.", attr.Name, lo, hi), attr.Expr.Range()))
	}
	return i, true, diags
}

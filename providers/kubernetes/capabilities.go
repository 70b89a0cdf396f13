package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// capabilityFormat versions what an inspection finds and how it is
// cached; bump it when either changes.
const capabilityFormat = 1

// imageFacts is what one inspection of an image finds: what plan compares
// (its ImageCapabilities) and what a pod needs to run it as the image
// expects: the service user's uid and gid (the pod runs as them, so the
// entrypoint needs no capability to switch), the image's environment the
// services' settings depend on, and the redis modules the image loads by
// itself.
type imageFacts struct {
	plan.ImageCapabilities
	UID        int64             `json:"uid"`
	GID        int64             `json:"gid"`
	Env        map[string]string `json:"env,omitempty"`
	SelfLoaded []string          `json:"self_loaded,omitempty"`
}

func (f imageFacts) env(name string) string { return f.Env[name] }

// keptEnv are the image variables the services' settings read
// (services/postgres: PATH, TZ; PG_MAJOR for the extension directory).
var keptEnv = []string{"PATH", "TZ", "PG_MAJOR", "PGDATA", "LANG"}

// capCache remembers what each image provides, keyed by the image's ID as
// the kubelet reports it (a content digest: what one inspection found
// stays true for it). Memory serves one process; files in dir, when set,
// later runs. refs remembers, for this process, which image ID a
// reference ran as, so that Create after Check asks the cluster nothing.
type capCache struct {
	kit.FactsCache[imageFacts]
	mu   sync.Mutex
	refs map[string]string // service + ref → image ID
}

// SetCacheDir sets where inspections of images are cached across runs (""
// keeps them in memory only). Call it before the first Check.
func (p *Provider) SetCacheDir(dir string) { p.caps.Dir = dir }

// Check reports, before anything is created, what features each image
// the plan starts provides, all images at once. It learns that from a
// short-lived pod of the image (inspect.go); its answer is cached by the
// image's digest, which the nodes' image lists give without a pod on a
// warm cache. An image no node has and none can pull fails here.
func (p *Provider) Check(ctx context.Context, uses []plan.ImageUse) (plan.Capabilities, error) {
	return kit.Check(ctx, uses, p.cat, p.cfg, func(ctx context.Context, service string, img config.Image) (plan.ImageCapabilities, error) {
		f, err := p.imageFacts(ctx, service, img)
		return f.ImageCapabilities, err
	})
}

// imageFacts returns what img provides for service and how to run it:
// from memory, else from the cache under an image ID the nodes report for
// the reference, else by inspecting it.
func (p *Provider) imageFacts(ctx context.Context, service string, img config.Image) (imageFacts, error) {
	refKey := service + "\x00" + img.Ref
	p.caps.mu.Lock()
	id := p.caps.refs[refKey]
	p.caps.mu.Unlock()
	if id != "" {
		if f, ok := p.caps.Get(p.capabilityKey(service, img, id)); ok {
			f.Image = img.Ref
			return f, nil
		}
	}
	v, err, _ := p.facts.Do(refKey, func() (any, error) {
		ids, err := p.nodeImageIDs(ctx, img.Ref)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if f, ok := p.caps.Get(p.capabilityKey(service, img, id)); ok {
				p.rememberRef(refKey, id)
				return f, nil
			}
		}
		f, id, err := p.inspect(ctx, service, img)
		if err != nil {
			return nil, err
		}
		// Stored under the pod's image ID and every digest the nodes
		// list for the reference: the next run finds it by either.
		cached := f
		cached.Image = "" // the same image may go by other names
		for _, alias := range append([]string{id}, ids...) {
			p.caps.Put(p.capabilityKey(service, img, alias), cached)
		}
		p.rememberRef(refKey, id)
		return f, nil
	})
	if err != nil {
		return imageFacts{}, fmt.Errorf("find what image %q for service %s provides: %w", img.Ref, service, err)
	}
	f := v.(imageFacts)
	f.Image = img.Ref
	return f, nil
}

func (p *Provider) rememberRef(refKey, id string) {
	p.caps.mu.Lock()
	defer p.caps.mu.Unlock()
	if p.caps.refs == nil {
		p.caps.refs = map[string]string{}
	}
	p.caps.refs[refKey] = id
}

// nodeImageIDs returns what the nodes' image lists (status.images) say
// identifies ref's content: every repo digest they list for it and,
// since locally imported images often have none (containerd lists only
// their tags), a fingerprint of the entry: its names and size. A
// re-import of other content under the same tag changes the size (and,
// with a registry, the digest); the fingerprint is the weaker key, used
// only to skip an inspection pod on a warm cache. None when no node has
// the image yet (a first pull) or the nodes cannot be listed (a
// namespaced Role): the inspection pod then decides.
func (p *Provider) nodeImageIDs(ctx context.Context, ref string) ([]string, error) {
	nodes, err := p.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		if isForbiddenErr(err) {
			return nil, nil
		}
		return nil, p.apiErr("list", "nodes", "", err)
	}
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, n := range nodes.Items {
		for _, im := range n.Status.Images {
			if !namesRef(im.Names, ref) {
				continue
			}
			for _, name := range im.Names {
				if strings.Contains(name, "@sha256:") || strings.HasPrefix(name, "sha256:") {
					add(name)
				}
			}
			names := slices.Clone(im.Names)
			slices.Sort(names)
			add(fmt.Sprintf("node-image:%s;size=%d", strings.Join(names, ","), im.SizeBytes))
		}
	}
	return out, nil
}

// namesRef reports whether an image's names include ref, as written or
// as the runtime normalizes a Docker Hub name (docker.io/library/…).
func namesRef(names []string, ref string) bool {
	for _, n := range names {
		if n == ref || n == "docker.io/"+ref || n == "docker.io/library/"+ref {
			return true
		}
	}
	return false
}

// capabilityKey names one inspection: the image ID, the service, the
// module paths configured for it and the allowlist it was filtered by.
func (p *Provider) capabilityKey(service string, img config.Image, imageID string) string {
	return kit.CapabilityKey("k8s", capabilityFormat, service, imageID, img.Modules, p.cat.Allowed(service))
}

// Inspected reports a whole inspection (kit.Inspection).
func (f imageFacts) Inspected() bool { return f.Features != nil }

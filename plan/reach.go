package plan

import (
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// desiredSandbox is what a first provision of in gets.
func desiredSandbox(in *config.Instance) *Sandbox {
	return &Sandbox{Services: in.Provision.Services(), Features: in.Provision,
		Networks: in.Networks, Exposure: exposure(in.Publish), Runtime: runtimeField(in.Runtime)}
}

// exposure is nil for the default (loopback without TLS), so plans and
// their JSON stay as they were for sandboxes that do not change it.
func exposure(p config.Publish) *config.Publish {
	if p == (config.Publish{}) || p.IsDefault() {
		return nil
	}
	return &p
}

// recordExposure reads a record's exposure; empty addresses are records
// made before the publish settings existed, which were loopback.
func recordExposure(r state.Reach) *config.Publish {
	p := config.Publish{Address: r.PublishAddress, AdvertiseHost: r.AdvertiseHost, TLS: r.TLS}
	if p.Address == "" {
		p.Address = config.DefaultPublishAddress
	}
	if p.AdvertiseHost == "" {
		p.AdvertiseHost = config.DefaultPublishAddress
	}
	return exposure(p)
}

func sameExposure(a, b *config.Publish) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Reach is the state record's reach for a sandbox shape.
func (s *Sandbox) Reach() state.Reach {
	p := config.DefaultPublish()
	if s.Exposure != nil {
		p = *s.Exposure
	}
	return state.Reach{Networks: s.Networks, PublishAddress: p.Address, AdvertiseHost: p.AdvertiseHost, TLS: p.TLS}
}

// Publish is the sandbox's exposure, the default when nil.
func (s *Sandbox) Publish() config.Publish {
	if s.Exposure == nil {
		return config.DefaultPublish()
	}
	return *s.Exposure
}

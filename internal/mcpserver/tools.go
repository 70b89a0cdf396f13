package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
)

// The tools' inputs. Their JSON schemas come from these types (the SDK
// derives them); descriptions are what an agent reads.

type requestIn struct {
	Address    string              `json:"address" jsonschema:"the on-demand sandbox block, e.g. sandbox.agent (or sandbox.agent[\"KEY\"])"`
	Key        string              `json:"key,omitempty" jsonschema:"names the instance; required over HTTP (stateless: no session to name it after); over stdio default: one key per session"`
	Extensions map[string][]string `json:"extensions,omitempty" jsonschema:"extra features for this call, service to features, e.g. {\"postgres\": [\"vector\"]}; \"search@2\" asks for a feature's API generation (list_features says which the image has)"`
	Profile    string              `json:"profile,omitempty" jsonschema:"a profile of the block's project (its services and extensions)"`
	TTL        string              `json:"ttl,omitempty" jsonschema:"lifetime from now, e.g. 30m, 4h, 2d (at most 30d)"`
	Prefix     string              `json:"prefix,omitempty" jsonschema:"start the env names with this instead of SANDBOXER_"`
	CarryData  bool                `json:"carry_data,omitempty" jsonschema:"if the instance must be replaced (a feature superset), carry its data into the new one"`
	// ReadyTimeout: see sandboxer.RequestOptions.
	ReadyTimeout string `json:"ready_timeout,omitempty" jsonschema:"how long a provision may wait for each service to start, e.g. 5m; default: grows with the machine's load"`
}

type addressIn struct {
	Address string `json:"address" jsonschema:"the on-demand sandbox block, e.g. sandbox.agent"`
	Key     string `json:"key,omitempty" jsonschema:"the instance key; required over HTTP; over stdio default: this session's"`
}

type extendIn struct {
	Address string `json:"address" jsonschema:"the on-demand sandbox block, e.g. sandbox.agent"`
	Key     string `json:"key,omitempty" jsonschema:"the instance key; required over HTTP; over stdio default: this session's"`
	TTL     string `json:"ttl" jsonschema:"new lifetime from now, e.g. 2h"`
}

type snapshotIn struct {
	Address string `json:"address" jsonschema:"the sandbox, e.g. sandbox.agent"`
	Key     string `json:"key,omitempty" jsonschema:"the instance key; required over HTTP; over stdio default: this session's"`
	Name    string `json:"name" jsonschema:"the snapshot's name"`
}

type resetIn struct {
	Address  string `json:"address" jsonschema:"the sandbox, e.g. sandbox.agent"`
	Key      string `json:"key,omitempty" jsonschema:"the instance key; required over HTTP; over stdio default: this session's"`
	Snapshot string `json:"snapshot,omitempty" jsonschema:"the snapshot to reset to; default: the sandbox's seed, or empty"`
}

type forkIn struct {
	Address string `json:"address" jsonschema:"the running source instance's block, e.g. sandbox.agent (or sandbox.agent[\"KEY\"])"`
	Key     string `json:"key,omitempty" jsonschema:"the source's key; required over HTTP; over stdio default: this session's"`
	Count   int    `json:"count" jsonschema:"how many copies, 1 to 16"`
	ToKey   string `json:"to_key,omitempty" jsonschema:"the copies' key prefix: they are PREFIX-1 … PREFIX-N (default: the source's key + -fork)"`
	TTL     string `json:"ttl,omitempty" jsonschema:"the copies' lifetime from now, e.g. 1h (default: the block's)"`
}

type emptyIn struct{}

type releaseOut struct {
	Address  string `json:"address"`
	Released bool   `json:"released"`
}

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "request_sandbox", Description: "Get a ready sandbox (PostgreSQL and/or Redis) with fresh credentials: " +
		"reused when the cached instance covers what is asked, else provisioned. The result's env holds ready-to-export variables " +
		"(URL, host, port, user, password per service) and available_extensions what this instance's images can enable. " +
		"Over HTTP the instance lives by its ttl, not the connection: call extend_sandbox as a heartbeat while the work goes on, release_sandbox at its end."}, s.request)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "release_sandbox", Description: "Tear an instance down when the work ends."}, s.release)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "extend_sandbox", Description: "Push an instance's expiry to now + ttl."}, s.extend)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "fork_sandbox", Description: "Copy a running instance, data and all, into count new instances " +
		"(keys PREFIX-1 … PREFIX-N): each holds the source's data as it stood at one instant, has its own credentials (in its env) and ttl, " +
		"and is an ordinary instance afterwards (release_sandbox it by its key). The source keeps serving."}, s.fork)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_sandboxes", Description: "List the on-demand instances, without credentials."}, s.list)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "snapshot_sandbox", Description: "Save an instance's data under a name."}, s.snapshot)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "reset_sandbox", Description: "Bring an instance's data back to a snapshot (or its seed)."}, s.reset)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_features", Description: "What each service may enable (the allowlist) and what its image provides, with versions; for a feature that comes in API generations (search: RediSearch 1.x is generation 1, the Redis Search 2.x API of redis:8 and valkey-search generation 2), which one the image has and which may be asked for as \"search@2\"."}, s.features)
}

// requestStateless is request_sandbox without a session: no lease, the
// instance lives by its ttl.
func (s *Server) requestStateless(ctx context.Context, addr string, in requestIn) (*mcp.CallToolResult, *api.Sandbox, error) {
	sbx, err := s.lib.Request(ctx, addr, sandboxer.RequestOptions{Extensions: in.Extensions, Profile: in.Profile,
		TTL: in.TTL, Prefix: in.Prefix, CarryData: in.CarryData, ReadyTimeout: in.ReadyTimeout})
	if err != nil {
		s.opts.Logger.Info("tool refused", "tool", "request_sandbox", "address", addr, "code", sandboxer.Classify(err).Code)
		return nil, nil, toolError(err)
	}
	s.opts.Logger.Info("tool", "tool", "request_sandbox", "address", sbx.Address, "generation", sbx.Generation, "reused", sbx.Reused, "from_pool", sbx.FromPool)
	return nil, sbx, nil
}

// instance is the address the call is about: the key given, else this
// session's.
func (s *Server) instance(ss *mcp.ServerSession, address, key string) (string, error) {
	a, err := config.ParseAddress(address)
	if err != nil {
		return "", fmt.Errorf("invalid: %v", err)
	}
	if a.HasKey {
		if key != "" && key != a.Key {
			return "", fmt.Errorf("invalid: give the key in the address or in \"key\", not both")
		}
		return a.String(), nil
	}
	if key == "" {
		if s.opts.Stateless {
			return "", fmt.Errorf("invalid: give a key (\"key\" or sandbox.NAME[\"KEY\"]): over stateless HTTP there is no session to name the instance after")
		}
		key = s.session(ss).key
	}
	return config.Address{Name: a.Name, Key: key, HasKey: true}.String(), nil
}

func (s *Server) request(ctx context.Context, req *mcp.CallToolRequest, in requestIn) (*mcp.CallToolResult, *api.Sandbox, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	if s.opts.Stateless {
		return s.requestStateless(cctx, addr, in)
	}
	had, err := s.hold(cctx, req.Session, addr)
	if err != nil {
		s.opts.Logger.Info("tool refused", "tool", "request_sandbox", "address", addr, "code", sandboxer.Classify(err).Code)
		return nil, nil, toolError(err)
	}
	sbx, err := s.lib.Request(cctx, addr, sandboxer.RequestOptions{Extensions: in.Extensions, Profile: in.Profile,
		TTL: in.TTL, Prefix: in.Prefix, CarryData: in.CarryData, ReadyTimeout: in.ReadyTimeout})
	if err != nil {
		s.unhold(cctx, req.Session, addr, had)
		s.opts.Logger.Info("tool refused", "tool", "request_sandbox", "address", addr, "code", sandboxer.Classify(err).Code)
		return nil, nil, toolError(err)
	}
	s.noteRequested(req.Session, addr)
	s.opts.Logger.Info("tool", "tool", "request_sandbox", "address", sbx.Address, "generation", sbx.Generation, "reused", sbx.Reused, "from_pool", sbx.FromPool)
	return nil, sbx, nil
}

func (s *Server) release(ctx context.Context, req *mcp.CallToolRequest, in addressIn) (*mcp.CallToolResult, releaseOut, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, releaseOut{}, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	released, err := s.lib.Release(cctx, addr, "")
	if err != nil {
		return nil, releaseOut{}, toolError(err)
	}
	if !s.opts.Stateless {
		s.noteReleased(req.Session, addr)
	}
	s.opts.Logger.Info("tool", "tool", "release_sandbox", "address", addr, "released", released)
	return nil, releaseOut{Address: addr, Released: released}, nil
}

func (s *Server) extend(ctx context.Context, req *mcp.CallToolRequest, in extendIn) (*mcp.CallToolResult, *api.Instance, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.lib.Extend(cctx, addr, "", in.TTL)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return nil, out, nil
}

func (s *Server) fork(ctx context.Context, req *mcp.CallToolRequest, in forkIn) (*mcp.CallToolResult, *api.ForkResult, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.lib.Fork(cctx, addr, sandboxer.ForkOptions{Count: in.Count, ToKey: in.ToKey, TTL: in.TTL})
	if err != nil {
		return nil, nil, toolError(err)
	}
	s.opts.Logger.Info("tool", "tool", "fork_sandbox", "address", addr, "copies", len(out.Sandboxes))
	return nil, out, nil
}

func (s *Server) list(ctx context.Context, _ *mcp.CallToolRequest, _ emptyIn) (*mcp.CallToolResult, *api.SandboxList, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.lib.Sandboxes(cctx)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return nil, out, nil
}

func (s *Server) snapshot(ctx context.Context, req *mcp.CallToolRequest, in snapshotIn) (*mcp.CallToolResult, *api.DataResult, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.lib.Snapshot(cctx, addr, in.Name)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return nil, out, nil
}

func (s *Server) reset(ctx context.Context, req *mcp.CallToolRequest, in resetIn) (*mcp.CallToolResult, *api.DataResult, error) {
	addr, err := s.instance(req.Session, in.Address, in.Key)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.lib.Reset(cctx, addr, in.Snapshot)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return nil, out, nil
}

func (s *Server) features(ctx context.Context, _ *mcp.CallToolRequest, _ emptyIn) (*mcp.CallToolResult, *api.FeatureList, error) {
	out, err := s.lib.Features(ctx)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return nil, out, nil
}

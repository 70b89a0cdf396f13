package kubernetes

import (
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// TestPortForwardFigures measures, on this host (where the pod IP
// answers, so both sides can be had), a forwarded connection beside a
// direct one to the pod IP: the connect latency of a new client
// connection up to its first answer (go-redis: TCP, AUTH, PING; pgx: TCP
// and the SCRAM login), a round trip on an open connection, and the
// throughput of reading an 8 MiB value. It fails only when the forward
// does not work; the figures are for docs/kubernetes.md (make
// bench-kube prints them with -v).
func TestPortForwardFigures(t *testing.T) {
	p, _ := newTestProvider(t)
	p.cfg.Endpoint = config.EndpointPortForward
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.fwdbench", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}}})
	ctx := ctxFor(t, 5*time.Minute)
	eps, err := p.Forward(ctx, rec)
	if err != nil || len(eps) != 2 {
		t.Fatalf("Forward: %v, %v", eps, err)
	}
	pg, rd := rec.Credentials["postgres"], rec.Credentials["redis"]
	// A new port-forward connection to the pod (what a heal costs before
	// the first stream), 10 times.
	var dials []time.Duration
	for range 10 {
		t0 := time.Now()
		c, err := p.dialPortForward(rec.Resources.Pod)
		mustf(t, err, "dial the port-forward")
		dials = append(dials, time.Since(t0))
		c.Close()
	}
	t.Logf("a new port-forward connection (WebSocket, SPDY tunnelled): p50 %s, max %s", pct(dials, 50), pct(dials, 100))
	var d net.Dialer
	sides := []struct {
		name     string
		pg, redi apply.Endpoint
	}{
		{"pod IP", apply.Endpoint{Host: pg.Host, Port: pg.Port}, apply.Endpoint{Host: rd.Host, Port: rd.Port}},
		{"port-forward", eps["postgres"], eps["redis"]},
	}
	const n = 100
	big := strings.Repeat("x", 8<<20)
	setup := redisClient(d.DialContext, rd, rd.Host, rd.Port)
	defer setup.Close()
	mustf(t, setup.Set(ctx, "big", big, 0).Err(), "SET big")
	t.Logf("%-13s %14s %14s %14s %14s %12s", "", "redis conn p50", "redis conn p99", "pgx conn p50", "redis RTT p50", "read MB/s")
	for _, s := range sides {
		var conns, pgConns, rtts []time.Duration
		for range n {
			t0 := time.Now()
			c := redisClient(d.DialContext, rd, s.redi.Host, s.redi.Port)
			mustf(t, c.Ping(ctx).Err(), "%s: PING", s.name)
			conns = append(conns, time.Since(t0))
			c.Close()
		}
		for range n / 4 {
			t0 := time.Now()
			conn, err := pgConnect(ctx, d.DialContext, pg, s.pg.Host, s.pg.Port)
			mustf(t, err, "%s: pgx connect", s.name)
			pgConns = append(pgConns, time.Since(t0))
			conn.Close(ctx)
		}
		c := redisClient(d.DialContext, rd, s.redi.Host, s.redi.Port)
		for range n {
			t0 := time.Now()
			mustf(t, c.Ping(ctx).Err(), "%s: PING", s.name)
			rtts = append(rtts, time.Since(t0))
		}
		const reads = 10
		t0 := time.Now()
		for range reads {
			v, err := c.Get(ctx, "big").Result()
			mustf(t, err, "%s: GET big", s.name)
			if len(v) != len(big) {
				t.Fatalf("%s: GET big: %d bytes", s.name, len(v))
			}
		}
		mbs := float64(reads*len(big)) / (1 << 20) / time.Since(t0).Seconds()
		c.Close()
		t.Logf("%-13s %14s %14s %14s %14s %12.0f", s.name, pct(conns, 50), pct(conns, 99), pct(pgConns, 50), pct(rtts, 50), mbs)
	}
}

func pct(ds []time.Duration, p float64) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	d := s[min(len(s)-1, int(math.Ceil(p/100*float64(len(s))))-1)]
	return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
}

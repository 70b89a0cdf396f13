package kit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/services"
)

// fakeForker records what PrepareFork asks of it (a unit test of pure
// ordering logic; the real Forkers run in the runtimes' fork tests).
type fakeForker struct {
	name       string
	size       int64
	connects   bool
	connectErr error
	log        *[]string
}

func (f *fakeForker) ForkSize(context.Context, services.Instance) (int64, error) {
	*f.log = append(*f.log, "size "+f.name)
	return f.size, nil
}

func (f *fakeForker) ForkCapture(context.Context, services.Instance, string, func(context.Context) error) (services.ForkCopy, error) {
	return services.ForkCopy{}, errors.New("not captured here")
}

func (f *fakeForker) ForkClean(context.Context, services.Instance, string, services.ForkCopy) error {
	return nil
}

func (f *fakeForker) ForkArgs(string, services.ForkCopy) []string { return nil }

// connectingForker is a fakeForker that connects ahead.
type connectingForker struct{ *fakeForker }

func (f connectingForker) ForkConnect(context.Context, services.Instance) (services.Forker, func(), error) {
	if f.connectErr != nil {
		*f.log = append(*f.log, "refused "+f.name)
		return nil, nil, f.connectErr
	}
	*f.log = append(*f.log, "connect "+f.name)
	connected := &fakeForker{name: f.name + "(connected)", log: f.log}
	return connected, func() { *f.log = append(*f.log, "close "+f.name) }, nil
}

func TestPrepareFork(t *testing.T) {
	ctx := context.Background()
	parts := func(log *[]string, redisErr error) []ForkPart {
		return []ForkPart{
			{Svc: "redis", F: connectingForker{&fakeForker{name: "redis", size: 10, connectErr: redisErr, log: log}}},
			{Svc: "valkey", F: connectingForker{&fakeForker{name: "valkey", size: 1, log: log}}},
			{Svc: "postgres", F: connectingForker{&fakeForker{name: "postgres", size: 100, log: log}}},
		}
	}

	t.Run("order, total, connect ahead of all but the first", func(t *testing.T) {
		var log []string
		ps := parts(&log, nil)
		var got int64
		release, err := PrepareFork(ctx, ps, func(total int64) error {
			got = total
			log = append(log, "room")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ps[0].Svc != "postgres" {
			t.Fatalf("first part %s, want postgres (it holds its writers; the others are captured inside its hold)", ps[0].Svc)
		}
		if got != 111 {
			t.Fatalf("room asked for %d bytes, want 111", got)
		}
		if _, ok := ps[0].F.(connectingForker); !ok {
			t.Fatalf("the first part was connected ahead: %T", ps[0].F)
		}
		for _, pt := range ps[1:] {
			if f, ok := pt.F.(*fakeForker); !ok || f.name != pt.Svc+"(connected)" {
				t.Fatalf("%s captures with %#v, want its connected Forker", pt.Svc, pt.F)
			}
		}
		want := []string{"size postgres", "size redis", "size valkey", "room", "connect redis", "connect valkey"}
		if !slices.Equal(log, want) {
			t.Fatalf("steps %q, want %q", log, want)
		}
		release()
		if tail := log[len(want):]; !slices.Equal(tail, []string{"close redis", "close valkey"}) {
			t.Fatalf("release did %q, want both connections closed", tail)
		}
	})

	t.Run("no room: nothing connected", func(t *testing.T) {
		var log []string
		noRoom := errors.New("no room")
		release, err := PrepareFork(ctx, parts(&log, nil), func(int64) error { return noRoom })
		if !errors.Is(err, noRoom) {
			t.Fatalf("err %v, want the room check's", err)
		}
		release()
		for _, l := range log {
			if l[:4] != "size" {
				t.Fatalf("%q after a failed room check", l)
			}
		}
	})

	t.Run("a failed connect closes the ones made", func(t *testing.T) {
		var log []string
		refused := errors.New("refused")
		ps := []ForkPart{
			{Svc: "postgres", F: &fakeForker{name: "postgres", log: &log}},
			{Svc: "valkey", F: connectingForker{&fakeForker{name: "valkey", connectErr: refused, log: &log}}},
			{Svc: "mysql", F: connectingForker{&fakeForker{name: "mysql", log: &log}}},
		}
		_, err := PrepareFork(ctx, ps, func(int64) error { return nil })
		if !errors.Is(err, refused) || err.Error() != "valkey: refused" {
			t.Fatalf("err %v, want valkey's refusal, naming it", err)
		}
		if !slices.Contains(log, "connect mysql") {
			t.Fatalf("mysql (started before valkey) was not connected: %q", log)
		}
		for _, l := range log {
			if svc, ok := strings.CutPrefix(l, "connect "); ok && !slices.Contains(log, "close "+svc) {
				t.Fatalf("%s's connection left open: %q", svc, log)
			}
		}
	})
}

package kit

import (
	"context"
	"fmt"
	"slices"

	"github.com/sandboxer/sandboxer/services"
)

// ForkPart is one service of a sandbox being forked: its Forker and the
// running instance it captures from. A runtime fills In.Run with its
// own way of running a command in the source.
type ForkPart struct {
	Svc string
	F   services.Forker
	In  services.Instance
}

// PrepareFork is what every runtime does before a fork's hold: it puts
// the service that holds its writers first (services.StartRank), so the
// others are captured inside its hold; it sums the bytes every part
// will copy (ForkSize) and hands the sum to the runtime's room check,
// before anything is opened; and it connects
// the later parts ahead of the hold (services.ForkConnector), so their
// capture there is one round trip on a connection already open.
//
// The returned release closes those connections; call it once the
// capture is over, also on an error after PrepareFork returned. On an
// error PrepareFork has closed what it opened. Its errors name the
// service, and room's pass unchanged; the caller adds the source's
// address and scrubs its secrets.
func PrepareFork(ctx context.Context, parts []ForkPart, room func(total int64) error) (release func(), err error) {
	slices.SortStableFunc(parts, func(a, b ForkPart) int { return services.StartRank(a.Svc) - services.StartRank(b.Svc) })
	var total int64
	for _, pt := range parts {
		n, err := pt.F.ForkSize(ctx, pt.In)
		if err != nil {
			return func() {}, fmt.Errorf("%s: %w", pt.Svc, err)
		}
		total += n
	}
	if err := room(total); err != nil {
		return func() {}, err
	}
	var closers []func()
	release = func() {
		for _, c := range closers {
			c()
		}
	}
	for i := 1; i < len(parts); i++ {
		pt := &parts[i]
		fc, ok := pt.F.(services.ForkConnector)
		if !ok {
			continue
		}
		f, closeConn, err := fc.ForkConnect(ctx, pt.In)
		if err != nil {
			release()
			return func() {}, fmt.Errorf("%s: %w", pt.Svc, err)
		}
		closers = append(closers, closeConn)
		pt.F = f
	}
	return release, nil
}

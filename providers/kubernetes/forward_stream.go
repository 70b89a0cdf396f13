package kubernetes

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// The forward's connection to a pod and the streams a client's
// connection rides on (forward.go).

// dialPortForward opens a port-forward connection to pod: WebSocket
// (SPDY tunnelled in it) first, SPDY for API servers that refuse the
// upgrade, as kubectl does.
func (p *Provider) dialPortForward(pod string) (httpstream.Connection, error) {
	if p.rest == nil {
		return nil, errors.New("port-forward needs a real cluster connection")
	}
	u := p.cs.CoreV1().RESTClient().Post().Namespace(p.ns).Resource("pods").Name(pod).SubResource("portforward").URL()
	ws, err := portforward.NewSPDYOverWebsocketDialer(u, p.rest)
	if err != nil {
		return nil, err
	}
	tr, upgrader, err := spdy.RoundTripperFor(p.rest)
	if err != nil {
		return nil, err
	}
	d := portforward.NewFallbackDialer(ws, spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, u),
		func(err error) bool { return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) })
	c, _, err := d.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, p.apiErr("create", "pods/portforward", pod, err)
	}
	return c, nil
}

// handle carries one accepted connection over a stream pair (the
// protocol's error stream and data stream, as kubectl's port-forward).
// A stream that cannot be made on the current connection (cut, not yet
// noticed) makes the forward dial again, once.
func (f *forward) handle(conn net.Conn, remote int) {
	defer conn.Close()
	var data, errStream httpstream.Stream
	var sc httpstream.Connection
	for attempt := 0; ; attempt++ {
		c, err := f.connection(f.ctx)
		if err != nil {
			return
		}
		errStream, data, err = f.streams(c, remote)
		if err == nil {
			sc = c
			break
		}
		f.mu.Lock()
		if f.conn == c {
			f.conn = nil
		}
		f.mu.Unlock()
		c.Close()
		if attempt == 1 {
			return
		}
	}
	defer sc.RemoveStreams(errStream, data)
	go func() { _, _ = io.Copy(io.Discard, errStream) }() // the server's complaint, if any: the client sees its connection end
	remoteDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(conn, data)
		close(remoteDone)
	}()
	localDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(data, conn)
		data.Close() // no more from the client
		close(localDone)
	}()
	select {
	case <-remoteDone:
	case <-localDone:
		select {
		case <-remoteDone:
		case <-sc.CloseChan():
		case <-f.ctx.Done():
		}
	case <-sc.CloseChan():
	case <-f.ctx.Done():
	}
	_ = data.Reset()
}

// streams opens the error and data streams of one forwarded connection.
func (f *forward) streams(c httpstream.Connection, remote int) (errStream, data httpstream.Stream, err error) {
	id := strconv.FormatInt(f.p.fwRequests.Add(1), 10)
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(remote))
	h.Set(corev1.PortForwardRequestIDHeader, id)
	errStream, err = c.CreateStream(h)
	if err != nil {
		return nil, nil, err
	}
	errStream.Close() // nothing is written on it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err = c.CreateStream(h)
	if err != nil {
		c.RemoveStreams(errStream)
		return nil, nil, err
	}
	return errStream, data, nil
}

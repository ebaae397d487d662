package overhead

import (
	"io"
	"net"
	"sync"
)

// Relay copies bytes between each connection it accepts and a connection
// of its own to the upstream, parsing nothing. What it adds over direct is
// the floor of any proxy on the machine: the second loopback hop alone,
// without HTTP (ReverseProxy's Bare adds net/http's server and transport).
type Relay struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

// NewRelay relays each connection ln accepts to upstream (host:port)
// until Close.
func NewRelay(ln net.Listener, upstream string) *Relay {
	r := &Relay{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Close stops accepting, closes every relayed connection and waits for the
// copies to end.
func (r *Relay) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go r.relay(c)
	}
}

// track registers c for Close; false once the relay is closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) relay(c net.Conn) {
	defer r.wg.Done()
	defer c.Close()
	u, err := net.Dial("tcp", r.upstream)
	if err != nil {
		return
	}
	defer u.Close()
	if !r.track(c) || !r.track(u) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(u, c)
	}()
	pipe(c, u)
	<-done
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, u)
	r.mu.Unlock()
}

// pipe copies src to dst, then ends dst's writing half so that the other
// side sees the end of the stream.
func pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

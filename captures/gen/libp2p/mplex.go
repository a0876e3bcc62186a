//go:build !nomplex

package main

import (
	"context"
	"net"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	mp "github.com/libp2p/go-mplex"
)

func mplexMuxer() libp2p.Option { return libp2p.Muxer("/mplex/6.7.0", mplexTransport{}) }

// mplexTransport adapts github.com/libp2p/go-mplex (v0.7.0) to go-libp2p's Multiplexer
// interface, which go-libp2p dropped from its own tree when it deprecated mplex.
type mplexTransport struct{}

func (mplexTransport) NewConn(c net.Conn, isServer bool, scope network.PeerScope) (network.MuxedConn, error) {
	m, err := mp.NewMultiplex(c, isServer, scope)
	if err != nil {
		return nil, err
	}
	return &mplexConn{m}, nil
}

type mplexConn struct{ m *mp.Multiplex }

func (c *mplexConn) Close() error   { return c.m.Close() }
func (c *mplexConn) IsClosed() bool { return c.m.IsClosed() }
func (c *mplexConn) OpenStream(ctx context.Context) (network.MuxedStream, error) {
	s, err := c.m.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	return (*mplexStream)(s), nil
}
func (c *mplexConn) AcceptStream() (network.MuxedStream, error) {
	s, err := c.m.Accept()
	if err != nil {
		return nil, err
	}
	return (*mplexStream)(s), nil
}

type mplexStream mp.Stream

func (s *mplexStream) Read(b []byte) (int, error)         { return (*mp.Stream)(s).Read(b) }
func (s *mplexStream) Write(b []byte) (int, error)        { return (*mp.Stream)(s).Write(b) }
func (s *mplexStream) Close() error                       { return (*mp.Stream)(s).Close() }
func (s *mplexStream) CloseWrite() error                  { return (*mp.Stream)(s).CloseWrite() }
func (s *mplexStream) CloseRead() error                   { return (*mp.Stream)(s).CloseRead() }
func (s *mplexStream) Reset() error                       { return (*mp.Stream)(s).Reset() }
func (s *mplexStream) SetDeadline(t time.Time) error      { return (*mp.Stream)(s).SetDeadline(t) }
func (s *mplexStream) SetReadDeadline(t time.Time) error  { return (*mp.Stream)(s).SetReadDeadline(t) }
func (s *mplexStream) SetWriteDeadline(t time.Time) error { return (*mp.Stream)(s).SetWriteDeadline(t) }

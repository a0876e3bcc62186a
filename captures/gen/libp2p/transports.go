package main

import (
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
)

var tcpTransport = tcp.NewTCPTransport

var quicTransport = libp2pquic.NewTransport

//go:build nomplex

package main

import (
	"log"

	"github.com/libp2p/go-libp2p"
)

// mplexMuxer: built with -tags nomplex, for go-libp2p releases whose muxer interfaces grew past
// what mplex.go's adapter of go-mplex v0.7.0 implements (v0.51.0: tests/test_keys.py).
func mplexMuxer() libp2p.Option {
	log.Fatal("this build has no mplex (-tags nomplex)")
	return nil
}

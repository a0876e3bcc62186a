package main

// The mesh session (-role mesh): one of three or more gossipsub peers, each listening on its own
// address (-listen) and dialling the peers started before it (-peer, comma-separated), so that
// every peer is in every other's mesh and each message reaches a peer over two paths.  Once
// every peer is in the topic, peer -index publishes -gossip messages, one every 300 ms after
// (index-1) s: by turns -small bytes of data (below go-libp2p-pubsub's IDONTWANT threshold,
// GossipSubIDontWantMessageThreshold = 1024: no IDONTWANT, so the two copies cross) and -large
// bytes (above it: the receivers send IDONTWANT to their other mesh peers before validating).
// The data is Snappy-compressed (as every eth2 gossip message, so that the message ID is eth2's)
// incompressible bytes: SHA-256 of (index, message, block) chained.  -validate-ms gives the topic
// a validator that takes that long, as a client's validation of a block: the IDONTWANT a peer
// sends on receipt (go-libp2p-pubsub's Preprocess, before validation) then reaches the other
// receivers before they forward the message (after validation), and they leave it out; without
// it the copies cross on the wire with the IDONTWANTs.  The peer leaves once it has received
// every other peer's messages and two seconds more; with -leave it first leaves the topic
// (unsubscribe, and a PRUNE to each peer of its mesh: gossipsub's Leave) and waits three seconds,
// so that every peer's PRUNEs are sent before any peer closes.
//
// The lazy variant (-mesh-degree, -heartbeat-ms: lazyParams) gives gossipsub a mesh smaller than
// the peers: the peers outside a peer's mesh get IHAVE at its heartbeats, and ask with IWANT for
// the messages they have not had yet; more GRAFTs than Dhi make it PRUNE.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// meshData is message j of peer index: n incompressible bytes, Snappy block format.
func meshData(index, j, n int) []byte {
	var raw []byte
	for b := 0; len(raw) < n; b++ {
		var seed [24]byte
		binary.BigEndian.PutUint64(seed[0:], uint64(index))
		binary.BigEndian.PutUint64(seed[8:], uint64(j))
		binary.BigEndian.PutUint64(seed[16:], uint64(b))
		s := sha256.Sum256(seed[:])
		raw = append(raw, s[:]...)
	}
	return snappy.Encode(nil, raw[:n])
}

func mesh(ctx context.Context, h host.Host, t *pubsub.Topic, sub *pubsub.Subscription, topic string,
	peers []string, index, peersN, count, small, large int, leave bool) {
	var received atomic.Int32
	go receiveGossip(ctx, h, sub, func() { received.Add(1) })
	for _, addr := range peers {
		connect(ctx, h, addr)
	}
	for len(t.ListPeers()) < peersN-1 {
		time.Sleep(100 * time.Millisecond)
	}
	// Two heartbeats (1 s each): every peer grafted into every other's mesh.
	time.Sleep(2500 * time.Millisecond)
	time.Sleep(time.Duration(index-1) * time.Second)
	for j := 0; j < count; j++ {
		size := small
		if j%2 == 1 {
			size = large
		}
		data := meshData(index, j, size)
		recordGossip(topic, data, messageID(&pb.Message{Data: data, Topic: &topic}), "sent", "tcp")
		if err := t.Publish(ctx, data); err != nil {
			panic(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for int(received.Load()) < (peersN-1)*count {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if leave {
		sub.Cancel()
		time.Sleep(3 * time.Second)
	}
	h.Close()
}

// lazyParams is gossipsub's defaults but for D, Dlo, Dhi and Dlazy (degrees "D,Dlo,Dhi,Dlazy",
// if given) and the heartbeat interval (heartbeatMs, if not 0).  Dout and Dscore are made to fit
// a small D (GossipSubParams.validate: Dout < Dlo, Dout < D/2, Dscore <= Dhi).
func lazyParams(degrees string, heartbeatMs int) pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	if degrees != "" {
		var d [4]int
		for i, f := range strings.Split(degrees, ",") {
			d[i], _ = strconv.Atoi(f)
		}
		p.D, p.Dlo, p.Dhi, p.Dlazy = d[0], d[1], d[2], d[3]
		p.Dout = min(p.Dout, p.Dlo-1, (p.D-1)/2)
		p.Dscore = min(p.Dscore, p.Dhi)
	}
	if heartbeatMs != 0 {
		p.HeartbeatInterval = time.Duration(heartbeatMs) * time.Millisecond
	}
	return p
}

// slowValidator makes the topic's validation take ms milliseconds per message (none if 0).
func slowValidator(ps *pubsub.PubSub, topic string, ms int) {
	if ms == 0 {
		return
	}
	ps.RegisterTopicValidator(topic, func(context.Context, peer.ID, *pubsub.Message) bool {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return true
	})
}

func splitPeers(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

package main

// The gossip plan (-gossip-plan): eth2 gossip messages both peers publish, for the interop
// cells with a py-libp2p peer.  make_interop.py writes it: the topics both peers join and, per
// role, the SSZ files that role publishes (Snappy block format, as every eth2 gossip message).
// The other peer publishes first (after blocks by range); this one publishes once the other's
// have come, then the dialer says goodbye.  One side at a time, so that each peer's truth lists
// its messages in their order on the wire.

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

type planMsg struct {
	Topic string `json:"topic"`
	File  string `json:"file"`
}

type gossipPlan struct {
	Topics   []string  `json:"topics"`
	Dialer   []planMsg `json:"dialer"`
	Listener []planMsg `json:"listener"`
	topics   map[string]*pubsub.Topic
	received atomic.Int64 // messages received from the other peer
}

func loadPlan(path string) *gossipPlan {
	raw, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	p := &gossipPlan{topics: map[string]*pubsub.Topic{}}
	if err := json.Unmarshal(raw, p); err != nil {
		log.Fatal(err)
	}
	return p
}

// join joins every topic of the plan (have: topics already joined) and records each message
// received from another peer.
func (p *gossipPlan) join(ctx context.Context, h host.Host, ps *pubsub.PubSub, have map[string]*pubsub.Topic) {
	for _, name := range p.Topics {
		t, ok := have[name]
		var sub *pubsub.Subscription
		var err error
		if !ok {
			if t, err = ps.Join(name); err != nil {
				log.Fatal(err)
			}
		}
		if sub, err = t.Subscribe(); err != nil {
			log.Fatal(err)
		}
		p.topics[name] = t
		go receiveGossip(ctx, h, sub, func() { p.received.Add(1) })
	}
}

// publish waits for the peer on each topic it publishes to, then publishes the messages in order.
func (p *gossipPlan) publish(ctx context.Context, h host.Host, to peer.ID, msgs []planMsg) {
	for _, m := range msgs {
		for len(p.topics[m.Topic].ListPeers()) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	for _, m := range msgs {
		ssz, err := os.ReadFile(m.File)
		if err != nil {
			log.Fatal(err)
		}
		data, topic := snappy.Encode(nil, ssz), m.Topic
		recordGossip(topic, data, messageID(&pb.Message{Data: data, Topic: &topic}), "sent", connTransport(h, to))
		if err := p.topics[topic].Publish(ctx, data); err != nil {
			log.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// await waits for the other peer's first message (a minute at most), then until n came or none
// has come for 5 seconds:
// a py-libp2p 0.8.1 peer sends fewer than it publishes (docs/interop.md), and the truth says
// what came.
func (p *gossipPlan) await(n int) {
	for end := time.Now().Add(time.Minute); p.received.Load() == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			log.Fatal("gossip plan: nothing received")
		}
	}
	last, quiet := p.received.Load(), time.Now()
	for p.received.Load() < int64(n) && time.Since(quiet) < 5*time.Second {
		time.Sleep(100 * time.Millisecond)
		if got := p.received.Load(); got != last {
			last, quiet = got, time.Now()
		}
	}
}

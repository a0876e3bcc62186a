package main

// The peer's own account of what it sent and received (-truth FILE), for the interop captures
// (make_interop.py merges both peers' files into the capture's truth): per req/resp chunk the
// protocol, request or response, sent or received, the result code, the context bytes, the SSZ
// length and sha256, and the length of its Snappy frames; per gossip message its topic, message
// id, data length and the SSZ's sha256; for each, the transport of the connection it went over
// ("tcp" or "quic-v1").  With -trace-pubsub, what go-libp2p-pubsub's tracer says the peer sent
// (SendRPC), per kind and topic: "pubsub_sent"; and each message it says came again
// (DuplicateMessage), with the peer it came from: "pubsub_duplicates".  The mesh session's
// truth also names the peer ("peer_id").

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
)

type truthMsg struct {
	Protocol  string  `json:"protocol"`
	Kind      string  `json:"kind"`
	Dir       string  `json:"dir"`
	Result    *int    `json:"result,omitempty"`
	Context   string  `json:"context,omitempty"`
	SSZLen    int     `json:"ssz_len"`
	SSZSha256 string  `json:"ssz_sha256"`
	FramedLen int     `json:"framed_len,omitempty"`
	Topic     string  `json:"topic,omitempty"`
	MsgID     string  `json:"msg_id,omitempty"`
	DataLen   int     `json:"data_len,omitempty"`
	Error     *string `json:"error,omitempty"`
	Transport string  `json:"transport"`
}

// truthConn is a connection as the host reports it: its security, the muxer and whether the
// muxer was agreed inside the security handshake (Noise extensions, TLS ALPN) rather than by
// multistream-select.
type truthConn struct {
	Transport  string `json:"transport"`
	Security   string `json:"security"`
	Muxer      string `json:"muxer"`
	EarlyMuxer bool   `json:"early_muxer"`
}

type truthLog struct {
	mu     sync.Mutex
	path   string
	Conns  []truthConn `json:"connections"`
	Msgs   []truthMsg  `json:"messages"`
	sent   map[[2]string]*pubsubCount
	sentAt [][2]string // sent's keys, in the order first seen
	dups   []pubsubDup
	peerID string // the mesh session's: the host's peer ID
}

// pubsubDup is a message the tracer says came again (DuplicateMessage: pubsub.go's
// shouldPush found its ID among those seen), and the peer it came from.
type pubsubDup struct {
	From  string `json:"from"`
	Topic string `json:"topic"`
	MsgID string `json:"msg_id"`
}

// pubsubCount is what go-libp2p-pubsub's tracer says the peer sent of one kind and topic: the
// entries of its RPCs, counted as its traceRPCMeta counts them (one per SubOpts, Message,
// ControlIHave, ControlIWant, ControlGraft, ControlPrune, ControlIDontWant), and the message
// IDs those carry; IDs, in hex and in the order sent, are those IDs (ihave, iwant, idontwant)
// or each Message's own (publish, eth2's rule: messageID).
type pubsubCount struct {
	Kind       string   `json:"kind"`
	Topic      string   `json:"topic"`
	Count      int      `json:"count"`
	MessageIDs int      `json:"message_ids"`
	IDs        []string `json:"ids,omitempty"`
}

// pubsubTrace is the pubsub.RawTracer that keeps SendRPC's counts (the truth's "pubsub_sent"):
// every RPC the router queued for a peer; and DuplicateMessage's messages ("pubsub_duplicates").
// The other events are not kept.
type pubsubTrace struct{ t *truthLog }

func (p pubsubTrace) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	add := func(kind, topic string, ids ...string) {
		k := [2]string{kind, topic}
		if t.sent == nil {
			t.sent = map[[2]string]*pubsubCount{}
		}
		c := t.sent[k]
		if c == nil {
			c = &pubsubCount{Kind: kind, Topic: topic}
			t.sent[k] = c
			t.sentAt = append(t.sentAt, k)
		}
		c.Count++
		c.MessageIDs += len(ids)
		for _, id := range ids {
			c.IDs = append(c.IDs, hex.EncodeToString([]byte(id)))
		}
	}
	for _, s := range rpc.GetSubscriptions() {
		if s.GetSubscribe() {
			add("subscribe", s.GetTopicid())
		} else {
			add("unsubscribe", s.GetTopicid())
		}
	}
	for _, m := range rpc.GetPublish() {
		add("publish", m.GetTopic())
		c := t.sent[[2]string{"publish", m.GetTopic()}]
		c.IDs = append(c.IDs, hex.EncodeToString([]byte(messageID(m))))
	}
	c := rpc.GetControl()
	for _, e := range c.GetIhave() {
		add("ihave", e.GetTopicID(), e.GetMessageIDs()...)
	}
	for _, e := range c.GetIwant() {
		add("iwant", "", e.GetMessageIDs()...)
	}
	for _, e := range c.GetGraft() {
		add("graft", e.GetTopicID())
	}
	for _, e := range c.GetPrune() {
		add("prune", e.GetTopicID())
	}
	for _, e := range c.GetIdontwant() {
		add("idontwant", "", e.GetMessageIDs()...)
	}
}

func (p pubsubTrace) DuplicateMessage(m *pubsub.Message) {
	p.t.mu.Lock()
	p.t.dups = append(p.t.dups, pubsubDup{From: m.ReceivedFrom.String(), Topic: m.GetTopic(),
		MsgID: hex.EncodeToString([]byte(messageID(m.Message)))})
	p.t.mu.Unlock()
}

func (pubsubTrace) AddPeer(peer.ID, protocol.ID)          {}
func (pubsubTrace) RemovePeer(peer.ID)                    {}
func (pubsubTrace) Join(string)                           {}
func (pubsubTrace) Leave(string)                          {}
func (pubsubTrace) Graft(peer.ID, string)                 {}
func (pubsubTrace) Prune(peer.ID, string)                 {}
func (pubsubTrace) ValidateMessage(*pubsub.Message)       {}
func (pubsubTrace) DeliverMessage(*pubsub.Message)        {}
func (pubsubTrace) RejectMessage(*pubsub.Message, string) {}
func (pubsubTrace) ThrottlePeer(peer.ID)                  {}
func (pubsubTrace) RecvRPC(*pubsub.RPC)                   {}
func (pubsubTrace) DropRPC(*pubsub.RPC, peer.ID)          {}
func (pubsubTrace) UndeliverableMessage(*pubsub.Message)  {}

// go-libp2p-pubsub v0.19 (go.v0.51.mod's, the keys tests' builds) has these in place of AddPeer
// and RemovePeer, and SendRPCCompleted: with them the tracer is a RawTracer of either version.
func (pubsubTrace) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (pubsubTrace) OnClosedOutboundStream(peer.ID)                       {}
func (pubsubTrace) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}

var truth = &truthLog{}

func (t *truthLog) add(m truthMsg) {
	t.mu.Lock()
	t.Msgs = append(t.Msgs, m)
	t.mu.Unlock()
}

// watch records each connection of h as it is established.
func (t *truthLog) watch(h host.Host) {
	h.Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		st := c.ConnState()
		t.mu.Lock()
		t.Conns = append(t.Conns, truthConn{Transport: transportOf(c), Security: string(st.Security),
			Muxer: string(st.StreamMultiplexer), EarlyMuxer: st.UsedEarlyMuxerNegotiation})
		t.mu.Unlock()
	}})
}

func (t *truthLog) write(role string) {
	if t.path == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	doc := map[string]any{"stack": "go-libp2p", "version": "v0.39.1", "role": role,
		"snappy": "github.com/golang/snappy v1.0.0", "connections": t.Conns, "messages": t.Msgs}
	if *traceSent {
		sent := []*pubsubCount{}
		for _, k := range t.sentAt {
			sent = append(sent, t.sent[k])
		}
		doc["pubsub_sent"] = sent
		doc["pubsub_duplicates"] = append([]pubsubDup{}, t.dups...)
	}
	if t.peerID != "" {
		doc["peer_id"] = t.peerID
	}
	out, _ := json.MarshalIndent(doc, "", " ")
	os.WriteFile(t.path, out, 0o644)
}

func shortName(proto string) string {
	return strings.TrimSuffix(strings.TrimPrefix(proto, "/eth2/beacon_chain/req/"), "/ssz_snappy")
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// recordChunks parses a request (response=false: uvarint length, Snappy frames) or the response
// chunks (result, context bytes for blocks_by_range/2, uvarint length, frames) in data and records
// each.  Parsing stops at the first thing it cannot read.
func recordChunks(proto string, data []byte, response bool, dir string, via string) {
	r := bytes.NewReader(data)
	withContext := strings.Contains(proto, "beacon_blocks_by_range/2")
	for r.Len() > 0 {
		m := truthMsg{Protocol: shortName(proto), Kind: "request", Dir: dir, Transport: via}
		if response {
			m.Kind = "response"
			res, _ := r.ReadByte()
			code := int(res)
			m.Result = &code
			if withContext && res == 0 {
				ctx := make([]byte, 4)
				if _, err := io.ReadFull(r, ctx); err != nil {
					return
				}
				m.Context = hex.EncodeToString(ctx)
			}
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return
		}
		start := r.Len()
		ssz := make([]byte, n)
		if _, err := io.ReadFull(snappy.NewReader(r), ssz); err != nil {
			return
		}
		m.SSZLen, m.SSZSha256, m.FramedLen = int(n), sum(ssz), start-r.Len()
		truth.add(m)
		if !response {
			return
		}
	}
}

func recordGossip(topic string, data []byte, id string, dir string, via string) {
	// The message type is the topic's name: /eth2/<fork digest>/<name>/ssz_snappy.
	name := "beacon_block"
	if parts := strings.Split(topic, "/"); len(parts) == 5 {
		name = parts[3]
	}
	m := truthMsg{Protocol: "gossip " + name, Kind: "gossip", Dir: dir, Topic: topic,
		MsgID: hex.EncodeToString([]byte(id)), DataLen: len(data), Transport: via}
	if ssz, err := snappy.Decode(nil, data); err == nil {
		m.SSZLen, m.SSZSha256 = len(ssz), sum(ssz)
	}
	truth.add(m)
}

// receiveGossip records each message sub delivers from another peer as received (then calls
// onReceived, if any), until ctx ends.
func receiveGossip(ctx context.Context, h host.Host, sub *pubsub.Subscription, onReceived func()) {
	for {
		m, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if m.ReceivedFrom == h.ID() {
			continue
		}
		recordGossip(m.GetTopic(), m.Data, messageID(m.Message), "received", connTransport(h, m.ReceivedFrom))
		if onReceived != nil {
			onReceived()
		}
	}
}

// transportOf is "quic-v1" for a connection to a /quic-v1 address, else "tcp".
func transportOf(c network.Conn) string {
	if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_QUIC_V1); err == nil {
		return "quic-v1"
	}
	return "tcp"
}

func streamTransport(s network.Stream) string { return transportOf(s.Conn()) }

// connTransport is the transport of the connection to p (the sessions keep one at a time).
func connTransport(h host.Host, p peer.ID) string {
	conns := h.Network().ConnsToPeer(p)
	if len(conns) != 1 {
		log.Fatalf("%d connections to %s: the truth cannot name the transport", len(conns), p)
	}
	return transportOf(conns[0])
}

// Command eth2peers runs two real go-libp2p hosts that speak the Ethereum consensus layer's
// req/resp (ssz_snappy) and gossipsub over plaintext TCP, with yamux or mplex, for p2pc's
// captures.  One process per side, each in its own network namespace:
//
//	eth2peers -role listen -muxer yamux -blocks DIR
//	eth2peers -role dial -muxer yamux -peer /ip4/192.0.2.2/tcp/9000/p2p/<id> -blocks DIR
//
// -session picks the workload: "full" (status, ping, metadata, blocks by range, gossip,
// goodbye), "broken" (the listener answers pings with malformed chunks, a protocol the listener
// does not serve gets "na", a gossip message is not Snappy), "short" (status, ping, goodbye:
// for the Noise capture).  -security noise, noise-ms, tls or tls-ms replaces plaintext; built with the
// patches in keylog/ (make_eth2.py applies them with go build -overlay), Noise writes its keys
// to $LIBP2P_NOISE_KEYLOG and TLS its secrets to $SSLKEYLOGFILE.  -transport quic runs the
// same workload over /quic-v1 (TLS 1.3 inside QUIC, no muxer: -security and -muxer do not
// apply), the listen address then /ip4/0.0.0.0/udp/9000/quic-v1; its secrets go to
// $SSLKEYLOGFILE too.  -transport both gives the host TCP (with -security and -muxer) and QUIC:
// the listener listens on every address of the comma-separated -listen, and -session dual has
// the dialer connect to each address of the comma-separated -peer in turn (TCP, then QUIC, as a
// node that later reaches its peer over QUIC), one connection at a time: status and ping over
// each, one block gossiped over each, then metadata, blocks by range and goodbye over the last.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	yamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	ma "github.com/multiformats/go-multiaddr"
)

const (
	protoStatus   = "/eth2/beacon_chain/req/status/1/ssz_snappy"
	protoPing     = "/eth2/beacon_chain/req/ping/1/ssz_snappy"
	protoMetadata = "/eth2/beacon_chain/req/metadata/2/ssz_snappy"
	protoGoodbye  = "/eth2/beacon_chain/req/goodbye/1/ssz_snappy"
	protoByRange  = "/eth2/beacon_chain/req/beacon_blocks_by_range/2/ssz_snappy"
	// Served by nobody here: the listener answers "na".
	protoUnserved = "/eth2/beacon_chain/req/light_client_bootstrap/1/ssz_snappy"
)

// brokenPings are the listener's answers to successive pings in the "broken" session, each
// breaking one rule of the ssz_snappy encoding (consensus-specs p2p-interface.md, Snappy
// framing_format.txt).  The order is the truth file's "broken_pings".
func brokenPings() [][]byte {
	good := chunk(0, nil, u64(7)) // result, uvarint(8), stream identifier, one 0x01 chunk
	const frame = 1 + 1 + 10      // where the data chunk's header starts
	crc := append([]byte{}, good...)
	crc[frame+4] ^= 0x01 // a bit of the masked CRC-32C
	unskippable := append([]byte{}, good...)
	unskippable[frame] = 0x02 // reserved unskippable chunk type
	short := append([]byte{0}, uvarint(4)...)
	short = append(short, framed(u64(7))...) // declares 4 bytes, the frames hold 8
	huge := append([]byte{0}, uvarint(11<<20)...)
	huge = append(huge, framed(u64(7))...) // declares 11 MiB > MAX_PAYLOAD_SIZE
	f := framed(u64(7))
	padded := append([]byte{0}, uvarint(8)...)
	padded = append(padded, f[:10]...)
	padded = append(padded, 0xfe, 200, 0, 0) // a 200-byte padding chunk: 226 bytes for 8
	padded = append(padded, make([]byte, 200)...)
	padded = append(padded, f[10:]...)
	// A compressed chunk whose Snappy block copies from before the start of its output.
	garbage := append([]byte{0}, uvarint(8)...)
	garbage = append(garbage, f[:10]...)
	garbage = append(garbage, 0x00, 8, 0, 0, 0, 0, 0, 0, 0x08, 0x0e, 0xff, 0xff)
	twice := append(append([]byte{}, good...), good...) // a second chunk for a one-chunk method
	cut := good[:frame+4+4]                             // ends inside the data chunk
	return [][]byte{crc, unskippable, short, huge, padded, garbage, twice, cut}
}

var brokenNames = []string{"bad_crc", "unskippable", "length_mismatch", "too_long",
	"compressed_too_long", "decompress_failed", "trailing", "truncated"}

// Mainnet fork digests (consensus-specs): the context bytes of each block's chunk.
var digests = map[string]string{"bellatrix": "4a26c58b", "capella": "bba4da96"}

// traceSent is -trace-pubsub (truth.go, pubsubTrace).
var traceSent *bool

func uvarint(n uint64) []byte {
	b := make([]byte, binary.MaxVarintLen64)
	return b[:binary.PutUvarint(b, n)]
}

// framed is the Snappy framing format (framing_format.txt), as golang/snappy's Writer makes it.
func framed(p []byte) []byte {
	var buf bytes.Buffer
	w := snappy.NewBufferedWriter(&buf)
	w.Write(p)
	w.Close()
	return buf.Bytes()
}

func request(ssz []byte) []byte { return append(uvarint(uint64(len(ssz))), framed(ssz)...) }

func chunk(result byte, ctx []byte, ssz []byte) []byte {
	out := []byte{result}
	out = append(out, ctx...)
	out = append(out, uvarint(uint64(len(ssz)))...)
	return append(out, framed(ssz)...)
}

// byRange is the beacon_blocks_by_range request: start slot, count, step.
func byRange() []byte { return request(append(append(u64(6_507_058), u64(8)...), u64(1)...)) }

func u64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

type block struct {
	name, fork string
	ssz        []byte
}

func loadBlocks(dir string) []block {
	files, _ := filepath.Glob(filepath.Join(dir, "*.ssz"))
	sort.Strings(files)
	var out []block
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		fork := "capella"
		if bytes.Contains([]byte(f), []byte("bellatrix")) {
			fork = "bellatrix"
		}
		out = append(out, block{filepath.Base(f), fork, b})
	}
	return out
}

func status() []byte {
	digest, _ := hex.DecodeString(digests["capella"])
	s := append([]byte{}, digest...)
	s = append(s, bytes.Repeat([]byte{0x11}, 32)...)
	s = append(s, u64(203_000)...)
	s = append(s, bytes.Repeat([]byte{0x22}, 32)...)
	return append(s, u64(6_507_058)...)
}

func serve(h host.Host, blocks []block, broken bool, bye chan<- struct{}) {
	var pings atomic.Int32
	bad := brokenPings()
	h.SetStreamHandler(protoStatus, func(s network.Stream) {
		readRequest(s)
		send(s, chunk(0, nil, status()))
		s.Close()
	})
	h.SetStreamHandler(protoPing, func(s network.Stream) {
		readRequest(s)
		if n := int(pings.Add(1)) - 1; broken && n < len(bad) {
			s.Write(bad[n])
		} else {
			send(s, chunk(0, nil, u64(7)))
		}
		s.Close()
	})
	h.SetStreamHandler(protoMetadata, func(s network.Stream) {
		md := append(u64(7), bytes.Repeat([]byte{0xff}, 8)...) // seq_number, attnets
		md = append(md, 0x0f)                                  // syncnets
		send(s, chunk(0, nil, md))
		s.Close()
	})
	h.SetStreamHandler(protoGoodbye, func(s network.Stream) {
		readRequest(s)
		s.Close()
		close(bye)
	})
	h.SetStreamHandler(protoByRange, func(s network.Stream) {
		readRequest(s)
		// ResourceUnavailable for the rest of the range: an SSZ List[byte, 256] message.
		errChunk := chunk(3, nil, []byte("blocks beyond the three real ones are not served"))
		for i, b := range blocks {
			ctx, _ := hex.DecodeString(digests[b.fork])
			c := chunk(0, ctx, b.ssz)
			recordChunks(protoByRange, c, true, "sent", streamTransport(s))
			if i < len(blocks)-1 {
				s.Write(c)
				continue
			}
			// The last block's tail and the error chunk in one write: one muxer frame holds
			// the end of one response chunk and all of the next.
			s.Write(c[:len(c)-100])
			s.Write(append(c[len(c)-100:], errChunk...))
		}
		recordChunks(protoByRange, errChunk, true, "sent", streamTransport(s))
		s.Close()
	})
}

func readRequest(s network.Stream) {
	req, _ := io.ReadAll(s)
	recordChunks(string(s.Protocol()), req, false, "received", streamTransport(s))
}

// send writes b on s and records the response chunks it holds (the truth of what was sent).
func send(s network.Stream, b []byte) {
	recordChunks(string(s.Protocol()), b, true, "sent", streamTransport(s))
	s.Write(b)
}

func call(ctx context.Context, h host.Host, p peer.ID, proto string, req []byte) []byte {
	s, err := h.NewStream(ctx, p, protocol.ID(proto))
	if err != nil {
		if proto == protoUnserved {
			return nil // refused with "na", as intended
		}
		log.Fatalf("%s: %v", proto, err)
	}
	if req != nil {
		recordChunks(proto, req, false, "sent", streamTransport(s))
		s.Write(req)
	}
	s.CloseWrite()
	resp, _ := io.ReadAll(s)
	s.Close()
	recordChunks(proto, resp, true, "received", streamTransport(s))
	return resp
}

// messageID is the Altair+ gossipsub message-id: SHA256(MESSAGE_DOMAIN_VALID_SNAPPY ||
// uint64_le(len(topic)) || topic || snappy-decompressed data)[:20].
func messageID(m *pb.Message) string {
	data, err := snappy.Decode(nil, m.Data)
	h := sha256.New()
	if err != nil {
		h.Write([]byte{0, 0, 0, 0})
		data = m.Data
	} else {
		h.Write([]byte{1, 0, 0, 0})
	}
	h.Write(u64(uint64(len(m.GetTopic()))))
	h.Write([]byte(m.GetTopic()))
	h.Write(data)
	return string(h.Sum(nil)[:20])
}

func main() {
	role := flag.String("role", "listen", "listen, dial or mesh (mesh.go)")
	muxer := flag.String("muxer", "yamux", "yamux or mplex")
	listen := flag.String("listen", "/ip4/0.0.0.0/tcp/9000", "listen address")
	peerAddr := flag.String("peer", "", "listener's multiaddr (dial); mesh: the peers to dial, comma-separated")
	blocksDir := flag.String("blocks", "", "folder of SignedBeaconBlock .ssz files")
	idFile := flag.String("idfile", "", "listen: write the peer multiaddr here")
	seed := flag.Int64("seed", 1, "identity key seed")
	keyType := flag.String("keytype", "ed25519", "identity key: ed25519 (its 32-byte seed is the seed byte "+
		"repeated) or secp256k1 (its scalar is the seed byte repeated, big-endian), as Ethereum clients use")
	gossipN := flag.Int("gossip", 3, "dial: blocks to publish on gossipsub")
	session := flag.String("session", "full", "full, broken, short or dual")
	transport := flag.String("transport", "tcp", "tcp, quic or both")
	security := flag.String("security", "plaintext", "plaintext, noise (the muxer negotiated early, in "+
		"the handshake's extensions), noise-ms (the muxer negotiated by multistream-select inside), tls (the "+
		"muxer agreed by ALPN) or tls-ms (multistream-select inside)")
	truthFile := flag.String("truth", "", "write what this peer sent and received here (JSON)")
	traceSent = flag.Bool("trace-pubsub", false, "-truth also holds the pubsub RPCs' entries the tracer says this peer sent")
	waitStdin := flag.Bool("wait-stdin", false, "dial: read a line from stdin before dialing (tests/test_keys.py "+
		"attaches p2pc keys to the running process first)")
	planFile := flag.String("gossip-plan", "", "full session: the eth2 gossip both peers publish (JSON, plan.go)")
	index := flag.Int("index", 1, "mesh: this peer's place, from 1 (mesh.go)")
	peersN := flag.Int("peers", 3, "mesh: how many peers the mesh has")
	small := flag.Int("small", 600, "mesh: bytes of a small message's data before Snappy")
	large := flag.Int("large", 2000, "mesh: bytes of a large message's data before Snappy")
	validateMs := flag.Int("validate-ms", 0, "mesh: milliseconds the topic's validator takes per message (0: none)")
	meshD := flag.String("mesh-degree", "", "mesh: gossipsub's D,Dlo,Dhi,Dlazy (mesh.go, lazyParams; empty: the defaults)")
	heartbeatMs := flag.Int("heartbeat-ms", 0, "mesh: gossipsub's heartbeat interval (0: the default, 1 s)")
	leave := flag.Bool("leave", false, "mesh: leave the topic before closing (mesh.go)")
	flag.Parse()
	truth.path = *truthFile
	defer truth.write(*role)
	broken := *session == "broken"

	keySrc := bytes.NewReader(bytes.Repeat([]byte{byte(*seed)}, 64))
	priv, _, _ := crypto.GenerateEd25519Key(keySrc)
	if *keyType == "secp256k1" {
		// GenerateSecp256k1Key ignores its reader: the scalar is given instead.
		priv, _ = crypto.UnmarshalSecp256k1PrivateKey(bytes.Repeat([]byte{byte(*seed)}, 32))
	}
	sec := libp2p.NoSecurity
	switch *security {
	case "noise":
		sec = libp2p.Security(noise.ID, noise.New)
	case "noise-ms":
		// No muxers handed to Noise: no early negotiation, multistream-select picks the muxer.
		sec = libp2p.Security(noise.ID, func(id protocol.ID, pk crypto.PrivKey) (*noise.Transport, error) {
			return noise.New(id, pk, nil)
		})
	case "tls":
		sec = libp2p.Security(libp2ptls.ID, libp2ptls.New)
	case "tls-ms":
		// No muxers handed to TLS: ALPN offers only "libp2p", multistream-select picks the muxer.
		sec = libp2p.Security(libp2ptls.ID, func(id protocol.ID, pk crypto.PrivKey) (*libp2ptls.Transport, error) {
			return libp2ptls.New(id, pk, nil)
		})
	}
	opts := []libp2p.Option{libp2p.Identity(priv), sec, libp2p.DisableRelay(),
		libp2p.ResourceManager(&network.NullResourceManager{})}
	if *transport != "quic" {
		opts = append(opts, libp2p.Transport(tcpTransport))
	}
	if *transport != "tcp" {
		opts = append(opts, libp2p.Transport(quicTransport))
	}
	if *muxer == "mplex" {
		opts = append(opts, mplexMuxer())
	} else {
		opts = append(opts, libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
	}
	if *role == "listen" || *role == "mesh" {
		opts = append(opts, libp2p.ListenAddrStrings(strings.Split(*listen, ",")...))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		log.Fatal(err)
	}
	truth.watch(h)
	ctx := context.Background()
	blocks := loadBlocks(*blocksDir)
	topic := fmt.Sprintf("/eth2/%s/beacon_block/ssz_snappy", digests["capella"])
	psOpts := []pubsub.Option{pubsub.WithMessageIdFn(messageID),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor()}
	if *traceSent {
		psOpts = append(psOpts, pubsub.WithRawTracer(pubsubTrace{truth}))
	}
	if *meshD != "" || *heartbeatMs != 0 {
		psOpts = append(psOpts, pubsub.WithGossipSubParams(lazyParams(*meshD, *heartbeatMs)))
	}
	ps, err := pubsub.NewGossipSub(ctx, h, psOpts...)
	if err != nil {
		log.Fatal(err)
	}
	t, err := ps.Join(topic)
	if err != nil {
		log.Fatal(err)
	}
	sub, _ := t.Subscribe()
	if *role == "mesh" {
		slowValidator(ps, topic, *validateMs)
		truth.peerID = h.ID().String()
		os.WriteFile(*idFile, []byte(fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())), 0o644)
		mesh(ctx, h, t, sub, topic, splitPeers(*peerAddr), *index, *peersN, *gossipN, *small, *large, *leave)
		return
	}
	var plan *gossipPlan
	if *planFile != "" {
		plan = loadPlan(*planFile)
		plan.join(ctx, h, ps, map[string]*pubsub.Topic{topic: t})
	}

	if *role == "listen" {
		bye := make(chan struct{})
		serve(h, blocks, broken, bye)
		if plan != nil {
			// The dialer (py-libp2p) publishes first, this listener once the dialer's have come.
			go func() {
				plan.await(len(plan.Dialer))
				for len(h.Network().Peers()) == 0 {
					time.Sleep(100 * time.Millisecond)
				}
				plan.publish(ctx, h, h.Network().Peers()[0], plan.Listener)
			}()
		}
		addr := fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())
		os.WriteFile(*idFile, []byte(addr), 0o644)
		go receiveGossip(ctx, h, sub, nil)
		<-bye // the dialer's goodbye ends every session
		time.Sleep(2 * time.Second)
		return
	}
	if *session == "dual" {
		dual(ctx, h, t, strings.Split(*peerAddr, ","), blocks, topic)
		return
	}
	if *waitStdin {
		// A process that runs before it connects, as a node does: a tracer attaches first.
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	info := connect(ctx, h, *peerAddr)
	call(ctx, h, info.ID, protoStatus, request(status()))
	if *session == "short" {
		call(ctx, h, info.ID, protoPing, request(u64(3)))
		call(ctx, h, info.ID, protoGoodbye, request(u64(1)))
		time.Sleep(500 * time.Millisecond)
		h.Close()
		return
	}
	if broken {
		for range brokenPings() {
			call(ctx, h, info.ID, protoPing, request(u64(3)))
		}
		call(ctx, h, info.ID, protoUnserved, request(bytes.Repeat([]byte{0x33}, 32)))
		for len(t.ListPeers()) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond)
		// Not Snappy: the message-id falls back to domain 0x00000000 over the raw data.
		if err := t.Publish(ctx, []byte("this gossip message is not snappy-compressed")); err != nil {
			log.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		call(ctx, h, info.ID, protoGoodbye, request(u64(1)))
		time.Sleep(500 * time.Millisecond)
		h.Close()
		return
	}
	call(ctx, h, info.ID, protoPing, request(u64(3)))
	call(ctx, h, info.ID, protoMetadata, nil)
	call(ctx, h, info.ID, protoByRange, byRange())
	if *gossipN > 0 {
		// Only then wait for the peer in the topic's mesh: a py-libp2p peer runs no gossipsub.
		gossip(ctx, h, info.ID, t, topic, blocks[:*gossipN])
	}
	if plan != nil {
		// The listener (py-libp2p) publishes first, this dialer once the listener's have come.
		plan.await(len(plan.Listener))
		plan.publish(ctx, h, info.ID, plan.Dialer)
		time.Sleep(time.Second)
	}
	call(ctx, h, info.ID, protoGoodbye, request(u64(1)))
	time.Sleep(500 * time.Millisecond)
	h.Close()
}

// connect dials the peer at addr (a multiaddr ending in /p2p/<id>) at that address only: the
// peerstore forgets the addresses it learnt before (identify's), so that the swarm does not
// dial the peer over another transport.
func connect(ctx context.Context, h host.Host, addr string) *peer.AddrInfo {
	pa, err := ma.NewMultiaddr(addr)
	if err != nil {
		log.Fatal(err)
	}
	info, err := peer.AddrInfoFromP2pAddr(pa)
	if err != nil {
		log.Fatal(err)
	}
	h.Peerstore().ClearAddrs(info.ID)
	if err := h.Connect(ctx, *info); err != nil {
		log.Fatal(err)
	}
	return info
}

// gossip waits for the peer in the topic's mesh, then publishes the blocks (Snappy block format).
func gossip(ctx context.Context, h host.Host, p peer.ID, t *pubsub.Topic, topic string, blocks []block) {
	for len(t.ListPeers()) == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	for _, b := range blocks {
		data := snappy.Encode(nil, b.ssz)
		recordGossip(topic, data, messageID(&pb.Message{Data: data, Topic: &topic}), "sent", connTransport(h, p))
		if err := t.Publish(ctx, data); err != nil {
			log.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
}

// dual is the dual session's dialer: one connection per address in turn, each closed before
// the next is dialled.
func dual(ctx context.Context, h host.Host, t *pubsub.Topic, addrs []string, blocks []block, topic string) {
	for i, addr := range addrs {
		info := connect(ctx, h, addr)
		call(ctx, h, info.ID, protoStatus, request(status()))
		call(ctx, h, info.ID, protoPing, request(u64(3)))
		last := i == len(addrs)-1
		if last {
			call(ctx, h, info.ID, protoMetadata, nil)
			call(ctx, h, info.ID, protoByRange, byRange())
		}
		gossip(ctx, h, info.ID, t, topic, blocks[i:i+1])
		if last {
			call(ctx, h, info.ID, protoGoodbye, request(u64(1)))
			time.Sleep(500 * time.Millisecond)
			h.Close()
			return
		}
		h.Network().ClosePeer(info.ID)
		// Gossipsub forgets the peer once the connection is gone: the next one starts afresh.
		for len(t.ListPeers()) > 0 || h.Network().Connectedness(info.ID) == network.Connected {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

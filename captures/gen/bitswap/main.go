// Command bitswappeers runs two real go-libp2p hosts exchanging files over boxo's Bitswap, for
// p2pc's captures.  One process per side, each in its own network namespace:
//
//	bitswappeers -role provide -proto /ipfs/bitswap/1.2.0 -transport T -idfile F -truth T FILE...
//	bitswappeers -role fetch -proto /ipfs/bitswap/1.2.0 -transport T -idfile F -truth T
//
// The provider imports each file as a UnixFS DAG (boxo's balanced importer, 16 KiB chunks: a
// CIDv0 dag-pb root, with -raw-leaves raw CIDv1 leaves as `ipfs add --raw-leaves` makes them),
// writes its address and the roots to the idfile, and serves them.  The fetcher walks each DAG
// over Bitswap (merkledag.FetchGraph through a blockservice: what `ipfs pin add` does), then
// closes.  Both hosts support only -proto, so that one Bitswap version is on the wire.
//
// The truth: every Bitswap message each peer received, as boxo decoded it (its tracer), with
// the protobuf size the sender's serializer gives it (ToProtoV0 for 1.0.0 and the unversioned
// ID, ToProtoV1 after), and the provider's blocks (CID, size).
//
// -transport: plaintext (TCP, /plaintext/2.0.0, yamux: the capture needs no keys), noise (TCP,
// /noise, yamux agreed in the handshake's extensions) or quic (/quic-v1: TLS 1.3 inside, each
// libp2p stream a QUIC stream, no muxer).  Built with captures/gen/libp2p/keylog's patches
// (make_bitswap.py), the hosts append their Noise keys to $LIBP2P_NOISE_KEYLOG and their QUIC
// TLS secrets to $SSLKEYLOGFILE; unpatched, they write none.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"sync"
	"time"

	"github.com/ipfs/boxo/bitswap"
	bsmsg "github.com/ipfs/boxo/bitswap/message"
	pb "github.com/ipfs/boxo/bitswap/message/pb"
	"github.com/ipfs/boxo/bitswap/network/bsnet"
	"github.com/ipfs/boxo/blockservice"
	"github.com/ipfs/boxo/blockstore"
	chunker "github.com/ipfs/boxo/chunker"
	"github.com/ipfs/boxo/ipld/merkledag"
	"github.com/ipfs/boxo/ipld/unixfs/importer/balanced"
	"github.com/ipfs/boxo/ipld/unixfs/importer/helpers"
	"github.com/ipfs/go-cid"
	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	yamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	insecure "github.com/libp2p/go-libp2p/p2p/security/insecure"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"
)

type entryJSON struct {
	CID          string `json:"cid"`
	Priority     int32  `json:"priority"`
	Cancel       bool   `json:"cancel"`
	WantType     string `json:"want_type"`
	SendDontHave bool   `json:"send_dont_have"`
}

type blockJSON struct {
	CID  string `json:"cid"`
	Size int    `json:"size"`
}

type presenceJSON struct {
	CID  string `json:"cid"`
	Type string `json:"type"`
}

type messageJSON struct {
	Size         int            `json:"size"`
	Full         bool           `json:"full"`
	Wantlist     []entryJSON    `json:"wantlist"`
	Blocks       []blockJSON    `json:"blocks"`
	Presences    []presenceJSON `json:"presences"`
	PendingBytes int32          `json:"pending_bytes"`
}

// recorder is the Bitswap tracer: what this peer received, in the order it decoded it.
type recorder struct {
	v0       bool
	mu       sync.Mutex
	received []messageJSON
}

func (r *recorder) MessageSent(peer.ID, bsmsg.BitSwapMessage) {}

func (r *recorder) MessageReceived(_ peer.ID, m bsmsg.BitSwapMessage) {
	var pbm *pb.Message
	if r.v0 {
		pbm = m.ToProtoV0()
	} else {
		pbm = m.ToProtoV1()
	}
	out := messageJSON{Size: proto.Size(pbm), Full: m.Full(), PendingBytes: m.PendingBytes(),
		Wantlist: []entryJSON{}, Blocks: []blockJSON{}, Presences: []presenceJSON{}}
	for _, e := range m.Wantlist() {
		wt := "block"
		if e.WantType == pb.Message_Wantlist_Have {
			wt = "have"
		}
		out.Wantlist = append(out.Wantlist, entryJSON{e.Cid.String(), e.Priority, e.Cancel, wt, e.SendDontHave})
	}
	for _, b := range m.Blocks() {
		out.Blocks = append(out.Blocks, blockJSON{b.Cid().String(), len(b.RawData())})
	}
	for _, p := range m.BlockPresences() {
		t := "have"
		if p.Type == pb.Message_DontHave {
			t = "dont_have"
		}
		out.Presences = append(out.Presences, presenceJSON{p.Cid.String(), t})
	}
	r.mu.Lock()
	r.received = append(r.received, out)
	r.mu.Unlock()
}

type rootJSON struct {
	File   string      `json:"file"`
	Bytes  int         `json:"bytes"`
	Root   string      `json:"root"`
	Blocks []blockJSON `json:"blocks"`
}

type idJSON struct {
	Addr  string     `json:"addr"`
	Roots []rootJSON `json:"roots"`
}

func main() {
	role := flag.String("role", "", "provide or fetch")
	proto := flag.String("proto", "/ipfs/bitswap/1.2.0", "the one Bitswap protocol ID both peers support")
	idfile := flag.String("idfile", "", "provider: written (address, roots); fetcher: read")
	truth := flag.String("truth", "", "where this peer writes what it received")
	transport := flag.String("transport", "plaintext", "plaintext, noise (both TCP with yamux) or quic")
	listen := flag.String("listen", "/ip4/0.0.0.0/tcp/4001", "provider: listen address (a /quic-v1 one for -transport quic)")
	seed := flag.Int("seed", 1, "identity key seed (deterministic peer IDs)")
	rawLeaves := flag.Bool("raw-leaves", true, "raw CIDv1 leaves (Bitswap 1.0.0 carries only CIDv0 blocks)")
	flag.Parse()
	ctx := context.Background()

	key, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{byte(*seed)}, 64)))
	check(err)
	opts := []libp2p.Option{libp2p.Identity(key), libp2p.DisableRelay(),
		libp2p.ResourceManager(&network.NullResourceManager{})}
	switch *transport {
	case "plaintext":
		opts = append(opts, libp2p.Security(insecure.ID, insecure.NewWithIdentity),
			libp2p.Muxer(yamux.ID, yamux.DefaultTransport), libp2p.Transport(tcp.NewTCPTransport))
	case "noise":
		opts = append(opts, libp2p.Security(noise.ID, noise.New),
			libp2p.Muxer(yamux.ID, yamux.DefaultTransport), libp2p.Transport(tcp.NewTCPTransport))
	case "quic":
		// QUIC secures and multiplexes itself: no security or muxer option applies to it.
		opts = append(opts, libp2p.Transport(libp2pquic.NewTransport))
	default:
		log.Fatalf("-transport plaintext, noise or quic")
	}
	if *role == "provide" {
		opts = append(opts, libp2p.ListenAddrStrings(*listen))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(opts...)
	check(err)
	bstore := blockstore.NewBlockstore(dssync.MutexWrap(ds.NewMapDatastore()))
	rec := &recorder{v0: *proto == "/ipfs/bitswap" || *proto == "/ipfs/bitswap/1.0.0"}
	// bsnet prefixes nothing here: the IDs are given whole.
	net := bsnet.NewFromIpfsHost(h, bsnet.SupportedProtocols([]protocol.ID{protocol.ID(*proto)}))
	bs := bitswap.New(ctx, net, nil, bstore, bitswap.WithTracer(rec), bitswap.ProviderSearchDelay(time.Hour))
	bserv := blockservice.New(bstore, bs)
	dag := merkledag.NewDAGService(bserv)

	switch *role {
	case "provide":
		id := idJSON{Addr: h.Addrs()[0].String() + "/p2p/" + h.ID().String()}
		for _, f := range flag.Args() {
			data, err := os.ReadFile(f)
			check(err)
			params := helpers.DagBuilderParams{Dagserv: dag, Maxlinks: helpers.DefaultLinksPerBlock,
				RawLeaves: *rawLeaves, CidBuilder: merkledag.V0CidPrefix()}
			db, err := params.New(chunker.NewSizeSplitter(bytes.NewReader(data), 16384))
			check(err)
			root, err := balanced.Layout(db)
			check(err)
			r := rootJSON{File: f, Bytes: len(data), Root: root.Cid().String(), Blocks: []blockJSON{}}
			check(merkledag.Walk(ctx, merkledag.GetLinksWithDAG(dag), root.Cid(), func(c cid.Cid) bool {
				b, err := bstore.Get(ctx, c)
				check(err)
				r.Blocks = append(r.Blocks, blockJSON{c.String(), len(b.RawData())})
				return true
			}))
			id.Roots = append(id.Roots, r)
		}
		writeJSON(*idfile, id)
		// Serve until the fetcher hangs up.
		gone := make(chan struct{})
		h.Network().Notify(&network.NotifyBundle{DisconnectedF: func(network.Network, network.Conn) {
			close(gone)
		}})
		<-gone
		time.Sleep(500 * time.Millisecond)
	case "fetch":
		var id idJSON
		data, err := os.ReadFile(*idfile)
		check(err)
		check(json.Unmarshal(data, &id))
		addr, err := ma.NewMultiaddr(id.Addr)
		check(err)
		info, err := peer.AddrInfoFromP2pAddr(addr)
		check(err)
		check(h.Connect(ctx, *info))
		for _, r := range id.Roots {
			c, err := cid.Decode(r.Root)
			check(err)
			tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			check(merkledag.FetchGraph(tctx, c, dag))
			cancel()
		}
		// Let the last cancels go out before hanging up.
		time.Sleep(time.Second)
	default:
		log.Fatalf("-role provide or fetch")
	}
	check(bs.Close())
	check(h.Close())
	rec.mu.Lock()
	writeJSON(*truth, map[string]any{"peer": h.ID().String(), "received": rec.received})
	rec.mu.Unlock()
}

func writeJSON(path string, v any) {
	data, err := json.MarshalIndent(v, "", " ")
	check(err)
	check(os.WriteFile(path, append(data, '\n'), 0o644))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

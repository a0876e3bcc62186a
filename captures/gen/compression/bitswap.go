// The Bitswap roles: the seed's file exchange (go-libp2p-compression-examples' bitswap example,
// with the go-bitswap, go-merkledag and go-unixfs versions it pins) between two processes over
// the compression transport, each peer writing what its Bitswap received.
//
//	comppeers -role provide -comp gzip -idx F -truth T FILE...
//	comppeers -role fetch -comp gzip -idx F -truth T
//
// The provider imports each file as a UnixFS DAG (balanced layout, 16 KiB chunks, raw CIDv1
// leaves under a CIDv0 dag-pb root, as `ipfs add --raw-leaves` makes them), writes its address
// and the roots with their blocks (CID, size) to the idx file, and serves them until the fetcher
// hangs up.  The fetcher walks each DAG over Bitswap, one Bitswap session per file (what
// merkledag.FetchGraph, `ipfs pin add`, uses), but one block at a time in DAG order (the root,
// then its links in order) with a pause after each, and closes.  FetchGraph asks for a node's
// links all at once, and how go-bitswap then batches wants, cancels and blocks into messages
// depends on timing: two runs (the transport off and on) would not send the same messages.
// One block at a time, each want, each cancel and each block is a message of its own in every
// run.  Neither host runs the ping service: go-bitswap pings a peer to time its DONT_HAVEs, and
// go-libp2p's ping may send a second ping before it sees the first answered, in some runs and not
// in others; without the service the ping stream is refused ("na") the same way in every run.
//
// go-bitswap v0.2.20 has no tracer: the truth comes from a wrapper around its network's
// receiver, which sees every message as Bitswap decoded it, before Bitswap handles it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/ioutil"
	"log"
	"sync"
	"time"

	bitswap "github.com/ipfs/go-bitswap"
	bsmsg "github.com/ipfs/go-bitswap/message"
	pb "github.com/ipfs/go-bitswap/message/pb"
	bsnet "github.com/ipfs/go-bitswap/network"
	"github.com/ipfs/go-blockservice"
	"github.com/ipfs/go-cid"
	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	blockstore "github.com/ipfs/go-ipfs-blockstore"
	chunker "github.com/ipfs/go-ipfs-chunker"
	nilrouting "github.com/ipfs/go-ipfs-routing/none"
	ipld "github.com/ipfs/go-ipld-format"
	"github.com/ipfs/go-merkledag"
	"github.com/ipfs/go-unixfs/importer/balanced"
	"github.com/ipfs/go-unixfs/importer/helpers"
	"github.com/libp2p/go-libp2p-core/host"
	"github.com/libp2p/go-libp2p-core/network"
	"github.com/libp2p/go-libp2p-core/peer"
	"github.com/libp2p/go-libp2p-core/protocol"
	ma "github.com/multiformats/go-multiaddr"
)

const chunkSize = 16384

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

type rootJSON struct {
	File   string      `json:"file"`
	Bytes  int         `json:"bytes"`
	Root   string      `json:"root"`
	Blocks []blockJSON `json:"blocks"`
}

type idxJSON struct {
	Addr  string     `json:"addr"`
	Roots []rootJSON `json:"roots"`
}

// recorder keeps every Bitswap message this peer received, in the order Bitswap got them, with
// the protobuf size of the 1.1.0+ form (ToProtoV1: what go-bitswap sends on 1.2.0).
type recorder struct {
	mu       sync.Mutex
	received []messageJSON
}

func (r *recorder) add(m bsmsg.BitSwapMessage) {
	out := messageJSON{Size: m.ToProtoV1().Size(), Full: m.Full(), PendingBytes: m.PendingBytes(),
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

// recordingNet is Bitswap's network with the receiver it is given wrapped in recordingReceiver.
type recordingNet struct {
	bsnet.BitSwapNetwork
	rec *recorder
}

func (n recordingNet) SetDelegate(r bsnet.Receiver) {
	n.BitSwapNetwork.SetDelegate(recordingReceiver{r, n.rec})
}

type recordingReceiver struct {
	bsnet.Receiver
	rec *recorder
}

func (r recordingReceiver) ReceiveMessage(ctx context.Context, p peer.ID, m bsmsg.BitSwapMessage) {
	r.rec.add(m)
	r.Receiver.ReceiveMessage(ctx, p, m)
}

// echoFirstHost is the host with each stream handler Bitswap sets waiting, before it runs, until
// the multistream echo of the stream's protocol is written.  go-multistream v0.1.2 answers an
// inbound stream lazily, writing the echo from a goroutine of its own, and go-bitswap's handler
// reads the one message and closes: when the close comes first the echo is never sent, in some
// runs and not in others, and the runs would not carry the same bytes.  A zero-length Write on
// the stream waits for that goroutine (lazyServerConn) and sends nothing.
type echoFirstHost struct {
	host.Host
}

func (h echoFirstHost) SetStreamHandler(pid protocol.ID, handler network.StreamHandler) {
	h.Host.SetStreamHandler(pid, func(s network.Stream) {
		if _, err := s.Write(nil); err != nil {
			s.Reset()
			return
		}
		handler(s)
	})
}

// newBitswap is the example's CreateBitswapNode with the recorder around its network (and an
// undelayed blockstore: the example's 1 µs delay only slows it).
func newBitswap(ctx context.Context, h host.Host, rec *recorder) (blockstore.Blockstore, ipld.DAGService, *bitswap.Bitswap) {
	routing, err := nilrouting.ConstructNilRouting(ctx, nil, nil, nil)
	check(err)
	bstore := blockstore.NewBlockstore(dssync.MutexWrap(ds.NewMapDatastore()))
	net := recordingNet{bsnet.NewFromIpfsHost(echoFirstHost{h}, routing), rec}
	bs := bitswap.New(ctx, net, bstore, bitswap.ProviderSearchDelay(time.Hour)).(*bitswap.Bitswap)
	return bstore, merkledag.NewDAGService(blockservice.New(bstore, bs)), bs
}

func provide(h host.Host, idx, truth string, files []string) {
	ctx := context.Background()
	rec := &recorder{}
	bstore, dag, bs := newBitswap(ctx, h, rec)
	// Count the hang-up from before the address is published: the fetcher may be quick.
	gone := make(chan struct{})
	var once sync.Once
	h.Network().Notify(&network.NotifyBundle{DisconnectedF: func(network.Network, network.Conn) {
		once.Do(func() { close(gone) })
	}})
	out := idxJSON{Addr: h.Addrs()[0].String() + "/p2p/" + h.ID().String()}
	for _, f := range files {
		data, err := ioutil.ReadFile(f)
		check(err)
		params := helpers.DagBuilderParams{Dagserv: dag, Maxlinks: helpers.DefaultLinksPerBlock,
			RawLeaves: true, CidBuilder: merkledag.V0CidPrefix()}
		db, err := params.New(chunker.NewSizeSplitter(bytes.NewReader(data), chunkSize))
		check(err)
		root, err := balanced.Layout(db)
		check(err)
		r := rootJSON{File: f, Bytes: len(data), Root: root.Cid().String(), Blocks: []blockJSON{}}
		check(merkledag.Walk(ctx, merkledag.GetLinksWithDAG(dag), root.Cid(), func(c cid.Cid) bool {
			b, err := bstore.Get(c)
			check(err)
			r.Blocks = append(r.Blocks, blockJSON{c.String(), len(b.RawData())})
			return true
		}))
		out.Roots = append(out.Roots, r)
	}
	writeJSON(idx, out)
	<-gone
	time.Sleep(500 * time.Millisecond)
	finish(h, bs, rec, truth)
}

func fetch(h host.Host, idx, truth string) {
	ctx := context.Background()
	rec := &recorder{}
	_, dag, bs := newBitswap(ctx, h, rec)
	data, err := ioutil.ReadFile(idx)
	check(err)
	var in idxJSON
	check(json.Unmarshal(data, &in))
	addr, err := ma.NewMultiaddr(in.Addr)
	check(err)
	info, err := peer.AddrInfoFromP2pAddr(addr)
	check(err)
	check(h.Connect(ctx, *info))
	for _, r := range in.Roots {
		c, err := cid.Decode(r.Root)
		check(err)
		tctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		check(walkInOrder(tctx, merkledag.NewSession(tctx, dag), c))
		cancel()
	}
	// Let the last cancels go out before hanging up.
	time.Sleep(time.Second)
	finish(h, bs, rec, truth)
}

// blockPause is how long the fetcher waits after each block: go-bitswap sends the block's cancel
// after a 1 ms debounce, so it leaves in a message of its own before the next want.
const blockPause = 50 * time.Millisecond

// walkInOrder fetches the DAG under c through ng one node at a time, depth first, links in order.
func walkInOrder(ctx context.Context, ng ipld.NodeGetter, c cid.Cid) error {
	nd, err := ng.Get(ctx, c)
	if err != nil {
		return err
	}
	time.Sleep(blockPause)
	for _, l := range nd.Links() {
		if err := walkInOrder(ctx, ng, l.Cid); err != nil {
			return err
		}
	}
	return nil
}

func finish(h host.Host, bs *bitswap.Bitswap, rec *recorder, truth string) {
	check(bs.Close())
	check(h.Close())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	writeJSON(truth, map[string]interface{}{"peer": h.ID().String(), "received": rec.received})
}

func writeJSON(path string, v interface{}) {
	data, err := json.MarshalIndent(v, "", " ")
	check(err)
	check(ioutil.WriteFile(path, append(data, '\n'), 0o644))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

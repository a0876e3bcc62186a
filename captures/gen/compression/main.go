// Command comppeers runs two hosts of adlrocha's go-libp2p fork with the compression
// transport (gzip, cbrotli or none) over plaintext security, for p2pc's captures.
//
// The dialer first runs go-libp2p-compression-examples' echo example (echo/main.go with
// -insecure: one /echo/1.0.0 stream, "Hello, world!\n" out, the listener writes the line back
// and closes), then sends each FILE on its own /p2pc/file/1.0.0 stream, one after the other; the
// listener answers each with the sha256 of what it read, in hex, and a newline.  The dialer
// prints one JSON line with what it sent, what came back and how long each exchange took.
//
//	comppeers -role listen -comp gzip -idfile F -files N
//	comppeers -role dial -comp gzip -peer /ip4/.../p2p/<id> FILE...
//
// -role provide and -role fetch exchange files over go-bitswap instead (bitswap.go).
//
// -comp lists the compression transports a peer offers, in order ("gzip,none" is go-libp2p's
// default in these forks); "off" is libp2p.NoCompression (no compression layer at all).
//
// Identities are Ed25519 keys from a fixed seed (the echo example's RSA keys from a seeded
// math/rand are not reproducible with current Go), so peer IDs are the same in every run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"os"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p"
	cbrotli "github.com/libp2p/go-libp2p-cbrotli"
	"github.com/libp2p/go-libp2p-core/compression/none"
	"github.com/libp2p/go-libp2p-core/crypto"
	"github.com/libp2p/go-libp2p-core/host"
	"github.com/libp2p/go-libp2p-core/network"
	"github.com/libp2p/go-libp2p-core/peer"
	gzip "github.com/libp2p/go-libp2p-gzip"
	ma "github.com/multiformats/go-multiaddr"
)

const (
	echoProto = "/echo/1.0.0"
	fileProto = "/p2pc/file/1.0.0"
	echoLine  = "Hello, world!\n"
)

type transfer struct {
	File    string  `json:"file"`
	Bytes   int     `json:"bytes"`
	Sha256  string  `json:"sha256"`
	Reply   string  `json:"reply"`
	Seconds float64 `json:"seconds"`
}

type report struct {
	EchoSent    string     `json:"echo_sent"`
	EchoReply   string     `json:"echo_reply"`
	EchoSeconds float64    `json:"echo_seconds"`
	Transfers   []transfer `json:"transfers"`
}

func main() {
	role := flag.String("role", "listen", "listen or dial; provide or fetch (Bitswap)")
	comp := flag.String("comp", "gzip", "comma-separated: gzip, cbrotli, none (/compression/none); or off")
	listen := flag.String("listen", "/ip4/0.0.0.0/tcp/9100", "listen address")
	peerAddr := flag.String("peer", "", "listener multiaddr (dial)")
	idFile := flag.String("idfile", "", "listen: write the multiaddr here")
	files := flag.Int("files", 1, "listen: exit after this many file streams")
	seed := flag.Int("seed", 1, "identity key seed")
	idx := flag.String("idx", "", "provide: write the address and the roots here; fetch: read them")
	truthFile := flag.String("truth", "", "provide, fetch: where this peer writes what it received")
	flag.Parse()

	isListener := *role == "listen" || *role == "provide"
	// The Bitswap roles run without the ping service (bitswap.go says why).
	h := newHost(*seed, *comp, isListener, *listen, *role != "provide" && *role != "fetch")
	switch *role {
	case "provide":
		provide(h, *idx, *truthFile, flag.Args())
		return
	case "fetch":
		fetch(h, *idx, *truthFile)
		return
	case "listen":
		listenLoop(h, *files, func() {
			ioutil.WriteFile(*idFile, []byte(fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())), 0o644)
		})
		return
	}

	pa, err := ma.NewMultiaddr(*peerAddr)
	if err != nil {
		log.Fatal(err)
	}
	info, _ := peer.AddrInfoFromP2pAddr(pa)
	ctx := context.Background()
	if err := h.Connect(ctx, *info); err != nil {
		log.Fatal(err)
	}
	var rep report
	// The echo example: write one line, read until the listener closes.
	t0 := time.Now()
	s, err := h.NewStream(ctx, info.ID, echoProto)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Write([]byte(echoLine)); err != nil {
		log.Fatal(err)
	}
	out, err := ioutil.ReadAll(s)
	if err != nil {
		log.Fatal(err)
	}
	rep.EchoSent, rep.EchoReply, rep.EchoSeconds = echoLine, string(out), time.Since(t0).Seconds()
	s.Close()

	for _, name := range flag.Args() {
		data, err := ioutil.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		t0 := time.Now()
		f, err := h.NewStream(ctx, info.ID, fileProto)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			log.Fatal(err)
		}
		f.Close() // core 0.6: Close half-closes (our writes); the reply can still be read
		reply, err := ioutil.ReadAll(f)
		if err != nil {
			log.Fatal(err)
		}
		sum := sha256.Sum256(data)
		rep.Transfers = append(rep.Transfers, transfer{File: name, Bytes: len(data),
			Sha256: hex.EncodeToString(sum[:]), Reply: string(reply), Seconds: time.Since(t0).Seconds()})
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	time.Sleep(time.Second)
	h.Close()
}

// newHost is a host with an Ed25519 identity from seed, plaintext security and the
// compression transports comp lists, listening on listen when listener is set, with the ping
// service when ping is set.
func newHost(seed int, comp string, listener bool, listen string, ping bool) host.Host {
	priv, _, _ := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{byte(seed)}, 64)))
	opts := []libp2p.Option{libp2p.Identity(priv), libp2p.NoSecurity, libp2p.DisableRelay(), libp2p.Ping(ping)}
	// The compression transports offered, in order of preference; "off" leaves the layer out.
	for _, c := range strings.Split(comp, ",") {
		switch c {
		case "gzip":
			opts = append(opts, libp2p.Compression(gzip.ID, gzip.New))
		case "cbrotli":
			opts = append(opts, libp2p.Compression(cbrotli.ID, cbrotli.New))
		case "none":
			opts = append(opts, libp2p.Compression(none.ID, none.New))
		case "off":
			opts = append(opts, libp2p.NoCompression)
		default:
			log.Fatalf("unknown -comp %q", c)
		}
	}
	if listener {
		opts = append(opts, libp2p.ListenAddrStrings(listen))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(context.Background(), opts...)
	if err != nil {
		log.Fatal(err)
	}
	return h
}

// listenLoop serves the echo and file protocols until `files` file streams are done.
func listenLoop(h host.Host, files int, ready func()) {
	done := make(chan struct{}, files)
	h.SetStreamHandler(echoProto, func(s network.Stream) {
		// The echo example's doEcho: one line back, then close.
		line, err := bufio.NewReader(s).ReadString('\n')
		if err != nil {
			s.Reset()
			return
		}
		s.Write([]byte(line))
		s.Close()
	})
	h.SetStreamHandler(fileProto, func(s network.Stream) {
		data, _ := ioutil.ReadAll(s)
		sum := sha256.Sum256(data)
		s.Write([]byte(hex.EncodeToString(sum[:]) + "\n"))
		s.Close()
		done <- struct{}{}
	})
	ready()
	for i := 0; i < files; i++ {
		<-done
	}
	time.Sleep(2 * time.Second)
}

// Command comppeers runs two hosts of adlrocha's go-libp2p fork with the compression
// transport (gzip, cbrotli or none) over plaintext security, for p2pc's captures: the echo
// example, then a transfer of real block files over a custom stream protocol.
//
//	comppeers -role listen -comp gzip -idfile F
//	comppeers -role dial -comp gzip -peer /ip4/.../p2p/<id> FILE...
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"time"

	cbrotli "github.com/libp2p/go-libp2p-cbrotli"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p-core/crypto"
	"github.com/libp2p/go-libp2p-core/network"
	"github.com/libp2p/go-libp2p-core/peer"
	gzip "github.com/libp2p/go-libp2p-gzip"
	ma "github.com/multiformats/go-multiaddr"
)

const (
	echoProto = "/echo/1.0.0"
	fileProto = "/p2pc/file/1.0.0"
)

func main() {
	role := flag.String("role", "listen", "listen or dial")
	comp := flag.String("comp", "gzip", "gzip, cbrotli or none")
	listen := flag.String("listen", "/ip4/0.0.0.0/tcp/9100", "listen address")
	peerAddr := flag.String("peer", "", "listener multiaddr (dial)")
	idFile := flag.String("idfile", "", "listen: write the multiaddr here")
	seed := flag.Int("seed", 1, "identity key seed")
	flag.Parse()

	priv, _, _ := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{byte(*seed)}, 64)))
	opts := []libp2p.Option{libp2p.Identity(priv), libp2p.NoSecurity}
	switch *comp {
	case "gzip":
		opts = append(opts, libp2p.Compression(gzip.ID, gzip.New))
	case "cbrotli":
		opts = append(opts, libp2p.Compression(cbrotli.ID, cbrotli.New))
	default:
		opts = append(opts, libp2p.NoCompression)
	}
	if *role == "listen" {
		opts = append(opts, libp2p.ListenAddrStrings(*listen))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(context.Background(), opts...)
	if err != nil {
		log.Fatal(err)
	}
	if *role == "listen" {
		done := make(chan struct{})
		h.SetStreamHandler(echoProto, func(s network.Stream) {
			line, _ := bufio.NewReader(s).ReadString('\n')
			s.Write([]byte(line))
			s.Close()
		})
		h.SetStreamHandler(fileProto, func(s network.Stream) {
			data, _ := ioutil.ReadAll(s)
			sum := sha256.Sum256(data)
			s.Write([]byte(hex.EncodeToString(sum[:]) + "\n"))
			s.Close()
			close(done)
		})
		ioutil.WriteFile(*idFile, []byte(fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())), 0o644)
		<-done
		time.Sleep(2 * time.Second)
		return
	}
	pa, _ := ma.NewMultiaddr(*peerAddr)
	info, _ := peer.AddrInfoFromP2pAddr(pa)
	ctx := context.Background()
	if err := h.Connect(ctx, *info); err != nil {
		log.Fatal(err)
	}
	s, err := h.NewStream(ctx, info.ID, echoProto)
	if err != nil {
		log.Fatal(err)
	}
	s.Write([]byte("Hello, world!\n"))
	reply, _ := bufio.NewReader(s).ReadString('\n')
	fmt.Printf("echo: %q\n", reply)
	s.Close()
	f, err := h.NewStream(ctx, info.ID, fileProto)
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range flag.Args() {
		data, err := ioutil.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		f.Write(data)
	}
	f.Close() // core 0.6: Close half-closes (writes); the reply can still be read
	sum, _ := ioutil.ReadAll(f)
	fmt.Printf("sha256: %s", sum)
	time.Sleep(time.Second)
	h.Close()
}

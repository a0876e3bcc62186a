package main

// The key log p2pc keys appends to: NSS key log lines for TLS and QUIC (the format Go's
// crypto/tls writes to KeyLogWriter, and Wireshark's tls.keylog_file reads), p2pc's Noise lines
// (docs/libp2p-decryption.md), each line once.

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"syscall"
)

type keyLog struct {
	f     *os.File
	seen  map[string]bool
	tls   int // lines written
	noise int
}

// openKeyLog opens path for appending, made 0600 if new; an existing path must be a regular file
// (O_NOFOLLOW: not through a symbolic link; O_NONBLOCK: a FIFO does not block the open).
func openKeyLog(path string) (*keyLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: give the key log's real path", path)
		}
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	} else if st.Mode().Perm()&0o006 != 0 {
		fmt.Fprintf(os.Stderr, "p2pc keys: warning: %s is open to every user (mode %04o): session keys decrypt the node's traffic\n",
			path, st.Mode().Perm())
	}
	return &keyLog{f: f, seen: map[string]bool{}}, nil
}

// add writes e's lines that were not written before.
func (k *keyLog) add(e *keysKeyEvent) error {
	switch e.Kind {
	case kindTLS:
		return k.line(fmt.Sprintf("%s %s %s", e.Label[:e.LabelLen], hex.EncodeToString(e.First[:e.FirstLen]),
			hex.EncodeToString(e.Second[:e.SecondLen])), &k.tls)
	case kindNoise:
		if err := k.line("LOCAL_STATIC_PRIVATE_KEY = "+base64.StdEncoding.EncodeToString(e.First[:e.FirstLen]), &k.noise); err != nil {
			return err
		}
		return k.line("LOCAL_EPHEMERAL_PRIVATE_KEY = "+base64.StdEncoding.EncodeToString(e.Second[:e.SecondLen]), &k.noise)
	}
	return nil
}

// seenMax bounds the lines remembered: past it they are forgotten, and a line seen again (a
// node's static key, at its next connection) is written once more, which readers take as well.
const seenMax = 1 << 16

// line writes one line in one write(2), so that a reader following the file never sees half.
func (k *keyLog) line(s string, count *int) error {
	if k.seen[s] {
		return nil
	}
	if len(k.seen) >= seenMax {
		clear(k.seen)
	}
	k.seen[s] = true
	*count++
	_, err := k.f.Write([]byte(s + "\n"))
	return err
}

func (k *keyLog) close() error { return k.f.Close() }

// key_event kinds (keys.bpf.c).
const (
	kindTLS   = 1
	kindNoise = 2
)

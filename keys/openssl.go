package main

// What to probe in a running program that links OpenSSL's libssl dynamically: the library it
// mapped, its exported SSL_read, SSL_read_ex, SSL_write and SSL_write_ex, and where that build
// keeps a connection's version, client random and master secret (keys.bpf.c, openssl_keys).
// struct ssl_st is private to OpenSSL (ssl/ssl_local.h, not installed), and its layout changes
// between releases, so the offsets are kept per build, by the library's GNU build ID: a build
// not in the table is refused in one line, never read at a guessed offset.  They are read from
// the build's own exported accessors, whose code loads each field: SSL_version (SSL.version),
// SSL_get_client_random (SSL.s3.client_random), SSL_get_session (SSL.session) and
// SSL_SESSION_get_master_key (master_key_length, master_key); `objdump -d` of the library shows
// them (docs/libp2p-decryption.md, "FISCO BCOS").

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type opensslLayout struct {
	name                                                    string
	version, clientRandom, session, masterKeyLen, masterKey uint64
}

// cookie packs the offsets for the BPF program (keys.bpf.c, openssl_keys).
func (l opensslLayout) cookie() uint64 {
	return l.version<<48 | l.clientRandom<<32 | l.session<<16 | l.masterKeyLen<<8 | l.masterKey
}

// opensslLayouts, by the libssl file's GNU build ID.
var opensslLayouts = map[string]opensslLayout{
	// Debian 12 (bookworm-security) libssl3 3.0.19-1~deb12u2, amd64: SSL_version `mov (%rdi),%eax`,
	// SSL_get_client_random `lea 0x160(%rdi),%rsi`, SSL_get_session `mov 0x918(%rdi),%rax`,
	// SSL_SESSION_get_master_key `mov 0x8(%rdi),%rbx` and `lea 0x50(%rax),%rsi`.
	"c0b9959017cf64b03131964573944fc72958bb2b": {"OpenSSL 3.0.19 (Debian 12 libssl3 3.0.19-1~deb12u2, amd64)",
		0, 0x160, 0x918, 0x8, 0x50},
}

var opensslFuncs = []string{"SSL_read", "SSL_read_ex", "SSL_write", "SSL_write_ex"}

// libsslMapped is the path of the libssl shared object pid has mapped, "" when none.
func libsslMapped(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 6 && strings.HasPrefix(filepath.Base(fields[5]), "libssl.so") {
			return fields[5], nil
		}
	}
	return "", sc.Err()
}

// inspectOpenSSL fills t with lib's four functions, when its build is one whose offsets are known.
func inspectOpenSSL(t *target, lib string) error {
	t.exe = fmt.Sprintf("/proc/%d/root%s", t.pid, lib) // the library as the process sees it
	ef, err := elf.Open(t.exe)
	if err != nil {
		return fmt.Errorf("pid %d (%s): its libssl %s: %v", t.pid, t.path, lib, err)
	}
	defer ef.Close()
	id := buildID(ef)
	layout, ok := opensslLayouts[id]
	if !ok {
		return fmt.Errorf("pid %d (%s): its libssl %s (build ID %s) is not a build whose struct offsets p2pc keys knows: none is read at a guessed offset (docs/libp2p-decryption.md, \"FISCO BCOS\")", t.pid, t.path, lib, id)
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("pid %d (%s): its libssl %s: %v", t.pid, t.path, lib, err)
	}
	for _, fn := range opensslFuncs {
		for _, s := range syms {
			if s.Name != fn || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF {
				continue
			}
			if off, ok := fileOffset(ef, s.Value); ok {
				t.points = append(t.points, probePoint{function: fn, offset: off, cookie: layout.cookie(), kind: pointOpenSSL})
			}
			break
		}
	}
	if len(t.points) != len(opensslFuncs) {
		return fmt.Errorf("pid %d (%s): its libssl %s exports %d of %s", t.pid, t.path, lib, len(t.points), strings.Join(opensslFuncs, ", "))
	}
	t.lib, t.openssl = lib, layout.name
	t.warnings = append(t.warnings, "OpenSSL: TLS 1.0-1.2 connections only (a TLS 1.3 one gives no key)")
	return nil
}

// buildID is the GNU build ID of ef, in hex, "" without one.
func buildID(ef *elf.File) string {
	s := ef.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		return ""
	}
	nameSize, descSize := ef.ByteOrder.Uint32(d[0:4]), ef.ByteOrder.Uint32(d[4:8])
	start := 12 + (nameSize+3)&^3
	if ef.ByteOrder.Uint32(d[8:12]) != 3 || !bytes.Equal(d[12:12+min(nameSize, 4)], []byte("GNU\x00")[:min(nameSize, 4)]) ||
		uint64(start)+uint64(descSize) > uint64(len(d)) {
		return ""
	}
	return hex.EncodeToString(d[start : start+descSize])
}

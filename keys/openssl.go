package main

// What to probe in a running program that links OpenSSL's libssl dynamically: the library it
// mapped, its exported SSL_read, SSL_read_ex, SSL_write and SSL_write_ex, and where that build
// keeps a connection's version, client random and master secret (keys.bpf.c, openssl_keys).
// struct ssl_st is private to OpenSSL (ssl/ssl_local.h, not installed) and its layout changes
// between releases, so the offsets are read from the build itself: from the machine code of its
// own exported accessors, each of which loads one of the fields from its argument, decoded with
// golang.org/x/arch's x86asm.  Only the instruction shapes these accessors compile to are read
// (accessorReads); any other code is refused in one line naming the library and the accessor,
// never read at a guessed offset.  amd64 only: an arm64 libssl is refused (docs/libp2p-decryption.md,
// "FISCO BCOS").

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// opensslLayout: the offsets of SSL.version, SSL.s3.client_random, SSL.session,
// SSL_SESSION.master_key_length and SSL_SESSION.master_key, in that order.
type opensslLayout [5]uint64

// cookie packs the offsets for the BPF program (keys.bpf.c, openssl_keys).
func (l opensslLayout) cookie() uint64 {
	return l[0]<<48 | l[1]<<32 | l[2]<<16 | l[3]<<8 | l[4]
}

func (l opensslLayout) String() string {
	return fmt.Sprintf("SSL.version at %#x, SSL.s3.client_random at %#x, SSL.session at %#x, SSL_SESSION.master_key_length at %#x, master_key at %#x",
		l[0], l[1], l[2], l[3], l[4])
}

// fieldRead is one instruction shape an accessor reads a field of its argument with: a MOV that
// loads size bytes from it into a register of that size, or a LEA (size 0) that takes the field's
// address, in each case at a displacement from the register holding the argument.  limit: the
// largest offset the cookie has room for.
type fieldRead struct {
	op    x86asm.Op
	size  int
	limit uint64
}

// accessorReads: each accessor, in OpenSSL 3.0's source (ssl/ssl_lib.c, ssl/ssl_sess.c), and the
// reads its code makes of its argument, in order; together the fields of opensslLayout.  Debian
// 12's libssl3 3.0.19 compiles them to `mov (%rdi),%eax`, `lea 0x160(%rdi),%rsi`,
// `mov 0x918(%rdi),%rax`, and `mov %rdi,%rax; mov 0x8(%rdi),%rbx` ... `lea 0x50(%rax),%rsi`.
var accessorReads = []struct {
	function string
	reads    []fieldRead
}{
	{"SSL_version", []fieldRead{{x86asm.MOV, 4, 0xffff}}},           // return s->version
	{"SSL_get_client_random", []fieldRead{{x86asm.LEA, 0, 0xffff}}}, // memcpy(out, ssl->s3.client_random, outlen)
	{"SSL_get_session", []fieldRead{{x86asm.MOV, 8, 0xffff}}},       // return ssl->session
	// outlen = sess->master_key_length (capped); memcpy(out, sess->master_key, outlen)
	{"SSL_SESSION_get_master_key", []fieldRead{{x86asm.MOV, 8, 0xff}, {x86asm.LEA, 0, 0xff}}},
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

// inspectOpenSSL fills t with lib's four functions and the offsets its accessors read.
func inspectOpenSSL(t *target, lib string) error {
	t.exe = fmt.Sprintf("/proc/%d/root%s", t.pid, lib) // the library as the process sees it
	ef, err := elf.Open(t.exe)
	if err != nil {
		return fmt.Errorf("pid %d (%s): its libssl %s: %v", t.pid, t.path, lib, err)
	}
	defer ef.Close()
	id := buildID(ef)
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("pid %d (%s): its libssl %s (build ID %s): %s: none is read at a guessed offset (docs/libp2p-decryption.md, \"FISCO BCOS\")",
			t.pid, t.path, lib, id, fmt.Sprintf(format, args...))
	}
	if ef.Machine != elf.EM_X86_64 {
		return refuse("built for %v, and p2pc keys reads libssl's offsets from amd64 code only", ef.Machine)
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("pid %d (%s): its libssl %s: %v", t.pid, t.path, lib, err)
	}
	exported := map[string]elf.Symbol{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF {
			exported[s.Name] = s
		}
	}
	var layout opensslLayout
	field := 0
	for _, a := range accessorReads {
		s, ok := exported[a.function]
		if !ok {
			return refuse("it exports no %s", a.function)
		}
		code, err := symbolCode(ef, s)
		if err != nil {
			return refuse("%s: %v", a.function, err)
		}
		offsets, err := argumentReads(code, a.reads)
		if err != nil {
			return refuse("%s's code is not one p2pc keys reads an offset from (%v)", a.function, err)
		}
		field += copy(layout[field:], offsets)
	}
	for _, fn := range opensslFuncs {
		s, ok := exported[fn]
		off, mapped := fileOffset(ef, s.Value)
		if !ok || !mapped {
			return fmt.Errorf("pid %d (%s): its libssl %s exports no %s", t.pid, t.path, lib, fn)
		}
		t.points = append(t.points, probePoint{function: fn, offset: off, cookie: layout.cookie(), kind: pointOpenSSL})
	}
	t.lib, t.openssl = lib, fmt.Sprintf("OpenSSL libssl build ID %s (%v)", id, layout)
	t.warnings = append(t.warnings, "OpenSSL: TLS 1.0-1.2 connections only (a TLS 1.3 one gives no key)")
	return nil
}

// symbolCode is the machine code of the function s.
func symbolCode(ef *elf.File, s elf.Symbol) ([]byte, error) {
	for _, sec := range ef.Sections {
		if sec.Flags&elf.SHF_EXECINSTR != 0 && s.Value >= sec.Addr && s.Value+s.Size <= sec.Addr+sec.Size {
			code := make([]byte, s.Size)
			_, err := sec.ReadAt(code, int64(s.Value-sec.Addr))
			return code, err
		}
	}
	return nil, fmt.Errorf("its code at %#x is in no executable section", s.Value)
}

// endbr64 opens functions built with -fcf-protection; x86asm does not decode it (it reads the F3
// prefix alone).
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// argumentReads follows an amd64 function's first argument (RDI, System V ABI) from its entry on
// the path that does not branch, through register copies (`mov %rdi,%rax`) until each copy is
// overwritten, and returns the displacements of the reads of it that want describes, in order.
// Instructions that do not touch the argument are passed over; one that touches it in any other
// way, or a return, jump or call before the last read, is an error naming the instruction.
func argumentReads(code []byte, want []fieldRead) ([]uint64, error) {
	pc := 0
	if bytes.HasPrefix(code, endbr64) {
		pc = len(endbr64)
	}
	held := map[x86asm.Reg]bool{x86asm.RDI: true} // the registers holding the argument
	var got []uint64
	for len(got) < len(want) {
		if pc >= len(code) {
			return nil, fmt.Errorf("it ends after %d of its %d reads of its argument", len(got), len(want))
		}
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			return nil, fmt.Errorf("+%#x: %v", pc, err)
		}
		w := want[len(got)]
		dst, dstReg := inst.Args[0].(x86asm.Reg)
		mem, memArg := inst.Args[1].(x86asm.Mem)
		src, srcReg := inst.Args[1].(x86asm.Reg)
		switch {
		case inst.Op == x86asm.RET || inst.Op == x86asm.JMP || inst.Op == x86asm.CALL:
			return nil, fmt.Errorf("+%#x: %v after %d of its %d reads of its argument", pc, inst, len(got), len(want))
		case !touches(inst, held):
		case inst.Op == x86asm.MOV && dstReg && srcReg && held[src] && dst >= x86asm.RAX && dst <= x86asm.R15:
			held[dst] = true // a copy
		case inst.Op == x86asm.MOV && dstReg && held[full(dst)] && !touches(x86asm.Inst{Args: x86asm.Args{inst.Args[1]}}, held):
			delete(held, full(dst)) // overwritten
		case inst.Op == w.op && dstReg && memArg && inst.Args[2] == nil &&
			mem.Segment == 0 && held[mem.Base] && mem.Index == 0 && mem.Disp >= 0 && uint64(mem.Disp) <= w.limit &&
			(w.size == 0 && dst >= x86asm.RAX && dst <= x86asm.R15 || inst.MemBytes == w.size && regBytes(dst) == w.size):
			got = append(got, uint64(mem.Disp))
			delete(held, full(dst))
		default:
			return nil, fmt.Errorf("+%#x: %v", pc, inst)
		}
		pc += inst.Len
	}
	return got, nil
}

// touches says whether any operand of inst is, or addresses memory with, a register in held.
func touches(inst x86asm.Inst, held map[x86asm.Reg]bool) bool {
	for _, a := range inst.Args {
		switch a := a.(type) {
		case x86asm.Reg:
			if held[full(a)] {
				return true
			}
		case x86asm.Mem:
			if held[full(a.Base)] || held[full(a.Index)] {
				return true
			}
		}
	}
	return false
}

// full is the 64-bit register r is part of (EDI, DI and DIL are RDI), r itself for others.
func full(r x86asm.Reg) x86asm.Reg {
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		return r
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return r - x86asm.EAX + x86asm.RAX
	case r >= x86asm.AX && r <= x86asm.R15W:
		return r - x86asm.AX + x86asm.RAX
	case r >= x86asm.AH && r <= x86asm.BH:
		return r - x86asm.AH + x86asm.RAX
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return r - x86asm.SPB + x86asm.RSP
	case r >= x86asm.AL && r <= x86asm.BL:
		return r - x86asm.AL + x86asm.RAX
	}
	return r
}

// regBytes is the size of a general-purpose register: 4 for EAX..R15L, 8 for RAX..R15.
func regBytes(r x86asm.Reg) int {
	switch {
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return 4
	case r >= x86asm.RAX && r <= x86asm.R15:
		return 8
	}
	return 0
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

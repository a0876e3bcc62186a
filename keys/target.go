package main

// What to probe in one running Go program: which Go and go-libp2p built it, where the two
// functions that see its session keys start in its file, whether anything calls them, and where
// flynn/noise keeps a handshake's private keys.  Read with Go's own readers (debug/buildinfo,
// debug/elf, debug/gosym, debug/dwarf), so a stripped release build (-s -w) works as well: it
// keeps .gopclntab and the module build info, and only the Noise offsets then come from a table.

import (
	"bytes"
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

const (
	tlsFunc = "crypto/tls.(*Config).writeKeyLog"
	// The Noise state's functions probed (keys.bpf.c, noise_keys): MixHash gives the keys before
	// the message carrying the ephemeral key leaves, ReadMessage where MixHash was inlined.
	noiseMixHash     = "github.com/flynn/noise.(*symmetricState).MixHash"
	noiseReadMessage = "github.com/flynn/noise.(*HandshakeState).ReadMessage"
	libp2pMod        = "github.com/libp2p/go-libp2p"
	noiseMod         = "github.com/flynn/noise"
)

// noiseLayouts: the offsets of HandshakeState.s.Private and .e.Private on 64-bit targets, by
// flynn/noise version, for binaries without DWARF.  state.go is the same in v1.0.0, v1.0.1 and
// v1.1.0: ss symmetricState (184 bytes: CipherState 80, hasK padded to 8, then ck, h, prevCK and
// prevH, slices of 24), then s and e, each a DHKey{Private, Public []byte} of 48.  DWARF gives
// the same (tests/test_keys.py: stripped builds, which have none, decrypt as the others).
var noiseLayouts = map[string]noiseLayout{
	"v1.0.0": {184, 232},
	"v1.0.1": {184, 232},
	"v1.1.0": {184, 232},
}

type noiseLayout struct{ static, ephemeral uint64 }

// cookie packs the layout for the BPF program (keys.bpf.c, noise_read_message).
func (l noiseLayout) cookie() uint64 { return l.static<<32 | l.ephemeral }

// probePoint is one function to probe: its file offset, for the uprobe, and which program reads it.
type probePoint struct {
	function string
	offset   uint64
	cookie   uint64
	kind     pointKind
}

type pointKind int

const (
	pointTLS     pointKind = iota // crypto/tls's writeKeyLog
	pointNoise                    // flynn/noise's handshake state
	pointOpenSSL                  // libssl's SSL_read/SSL_write (openssl.go)
)

type target struct {
	pid       int
	exe       string // /proc/PID/exe (OpenSSL: its libssl): the uprobes are set on its inode
	path      string // the program's path, for messages
	goVersion string
	libp2p    string // go-libp2p's version (and its replacement, if any)
	noise     string // flynn/noise's version, "" without one
	openssl   string // OpenSSL: the libssl build (openssl.go), "" for a Go program
	lib       string // OpenSSL: the libssl path the process mapped
	points    []probePoint
	warnings  []string // what will not be read, one line each
}

// inspect reads pid's program and says what can be probed in it, or in one line why nothing can.
func inspect(pid int) (*target, error) {
	t := &target{pid: pid, exe: fmt.Sprintf("/proc/%d/exe", pid)}
	t.path, _ = os.Readlink(t.exe)
	f, err := os.Open(t.exe)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("pid %d: no such process", pid)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("pid %d: not permitted to read its program: another user's process needs CAP_SYS_PTRACE (run as root, or setcap cap_sys_ptrace,cap_bpf,cap_perfmon+ep on p2pc-keys)", pid)
	case err != nil:
		return nil, fmt.Errorf("pid %d: %v", pid, err)
	}
	defer f.Close()

	bi, err := buildinfo.Read(f)
	if err != nil {
		// A program that links OpenSSL's libssl dynamically (openssl.go).
		if lib, lerr := libsslMapped(pid); lerr == nil && lib != "" {
			if err := inspectOpenSSL(t, lib); err != nil {
				return nil, err
			}
			return t, nil
		}
		return nil, fmt.Errorf("pid %d (%s) is not a Go program (%v), nor one that maps a libssl.so (a statically linked OpenSSL or TASSL is not probed)", pid, t.path, err)
	}
	t.goVersion = bi.GoVersion
	if err := registerABI(bi); err != nil {
		return nil, fmt.Errorf("pid %d (%s): %v", pid, t.path, err)
	}
	t.libp2p, t.noise = moduleVersion(bi, libp2pMod), moduleVersion(bi, noiseMod)
	if t.libp2p == "" {
		return nil, fmt.Errorf("pid %d (%s, %s) has no go-libp2p in it", pid, t.path, bi.GoVersion)
	}

	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("pid %d (%s): not an ELF file: %v", pid, t.path, err)
	}
	funcs, err := functions(ef)
	if err != nil {
		return nil, fmt.Errorf("pid %d (%s): %v", pid, t.path, err)
	}

	if p, warn := locate(ef, funcs, tlsFunc, "TLS and QUIC"); warn != "" {
		t.warnings = append(t.warnings, warn)
	} else {
		t.points = append(t.points, p)
	}
	if t.noise == "" {
		t.warnings = append(t.warnings, "no flynn/noise in it: no Noise keys")
	} else if layout, err := noiseOffsets(ef, t.noise); err != nil {
		t.warnings = append(t.warnings, err.Error())
	} else {
		var missing []string
		for _, fn := range []string{noiseMixHash, noiseReadMessage} {
			if p, warn := locate(ef, funcs, fn, "Noise"); warn != "" {
				missing = append(missing, warn)
			} else {
				p.cookie, p.kind = layout.cookie(), pointNoise
				t.points = append(t.points, p)
			}
		}
		if len(missing) == 2 {
			t.warnings = append(t.warnings, missing...)
		}
	}
	if len(t.points) == 0 {
		return nil, fmt.Errorf("pid %d (%s): nothing to probe: %s", pid, t.path, strings.Join(t.warnings, "; "))
	}
	return t, nil
}

// registerABI checks that arguments come in registers, as keys.bpf.c reads them: Go 1.17 or later
// (amd64; 1.18 on arm64), for this machine's architecture.
func registerABI(bi *buildinfo.BuildInfo) error {
	arch := runtime.GOARCH
	for _, s := range bi.Settings {
		if s.Key == "GOARCH" {
			arch = s.Value
		}
	}
	if arch != runtime.GOARCH {
		return fmt.Errorf("built for %s, this machine is %s", arch, runtime.GOARCH)
	}
	minor := 0
	if v, ok := strings.CutPrefix(bi.GoVersion, "go1."); ok {
		minor, _ = strconv.Atoi(strings.FieldsFunc(v, func(r rune) bool { return r < '0' || r > '9' })[0])
	}
	need := map[string]int{"amd64": 17, "arm64": 18}[arch]
	if need == 0 {
		return fmt.Errorf("Go's register ABI is mapped for amd64 and arm64, not %s", arch)
	}
	if minor < need {
		return fmt.Errorf("built with %s, before Go 1.%d passed arguments in registers on %s", bi.GoVersion, need, arch)
	}
	return nil
}

// moduleVersion is the version of module path in the build, with its replacement if it has one.
func moduleVersion(bi *buildinfo.BuildInfo, path string) string {
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != path {
			continue
		}
		if m.Replace != nil {
			return fmt.Sprintf("%s (replaced by %s %s)", m.Version, m.Replace.Path, m.Replace.Version)
		}
		if m.Version == "" {
			return "(devel)"
		}
		return m.Version
	}
	return ""
}

// functions reads the function table from .gopclntab, which -s -w keeps.
func functions(ef *elf.File) (*gosym.Table, error) {
	pcln, text := ef.Section(".gopclntab"), ef.Section(".text")
	if pcln == nil || text == nil {
		return nil, errors.New("no .gopclntab or .text section")
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %v", err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, textStart(ef, pcln.Addr, text)))
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %v", err)
	}
	return tab, nil
}

// textStart is the address .gopclntab's function entries are offsets from: the symbol
// runtime.text.  Go's linker puts it at the start of .text, but an external link (cgo: kubo,
// Prysm) puts the C toolchain's code first, and Go 1.26's pcHeader no longer holds it.  Without
// a symbol table (-s) it is the runtime's firstmoduledata.text: the word that points at
// .gopclntab (moduledata.pcHeader) starts that struct, in .go.module since Go 1.26 and in
// .noptrdata before, and its text field follows six slices, findfunctab, minpc and maxpc
// (runtime/symtab.go, the same since Go 1.16).
func textStart(ef *elf.File, pclntab uint64, text *elf.Section) uint64 {
	if syms, err := ef.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	const ptr = 8 // 64-bit targets only (amd64, arm64)
	for _, name := range []string{".go.module", ".noptrdata"} {
		sect := ef.Section(name)
		if sect == nil {
			continue
		}
		data, err := sect.Data()
		if err != nil {
			continue
		}
		word := func(i int) uint64 { return ef.ByteOrder.Uint64(data[i:]) }
		for i := 0; i+24*ptr <= len(data); i += ptr {
			if word(i) != pclntab {
				continue
			}
			minpc, maxpc, start := word(i+20*ptr), word(i+21*ptr), word(i+22*ptr)
			if start >= text.Addr && start <= minpc && minpc < maxpc && maxpc <= text.Addr+text.Size {
				return start
			}
		}
	}
	return text.Addr
}

// locate finds function's entry and its file offset, and checks that something calls it: a
// function the compiler inlined everywhere is absent, or present with no call site left.
func locate(ef *elf.File, funcs *gosym.Table, function, what string) (probePoint, string) {
	fn := funcs.LookupFunc(function)
	if fn == nil {
		return probePoint{}, fmt.Sprintf("%s is not in the program (inlined or not linked): no %s keys", function, what)
	}
	off, ok := fileOffset(ef, fn.Entry)
	if !ok {
		return probePoint{}, fmt.Sprintf("%s: its address %#x is in no executable segment", function, fn.Entry)
	}
	if n := callSites(ef, fn.Entry); n == 0 {
		return probePoint{}, fmt.Sprintf("%s is in the program but nothing calls it (inlined at every call): no %s keys", function, what)
	}
	return probePoint{function: function, offset: off}, ""
}

func fileOffset(ef *elf.File, addr uint64) (uint64, bool) {
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// callSites counts the direct calls to entry in .text: CALL rel32 on amd64, BL on arm64.
func callSites(ef *elf.File, entry uint64) int {
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		return 0
	}
	n := 0
	switch ef.Machine {
	case elf.EM_X86_64:
		for i := 0; i+5 <= len(code); i++ {
			if code[i] != 0xe8 {
				continue
			}
			next := text.Addr + uint64(i) + 5
			if next+uint64(int64(int32(binary.LittleEndian.Uint32(code[i+1:])))) == entry {
				n++
			}
		}
	case elf.EM_AARCH64:
		for i := 0; i+4 <= len(code); i += 4 {
			insn := binary.LittleEndian.Uint32(code[i:])
			if insn&0xfc000000 != 0x94000000 {
				continue
			}
			imm := int64(int32(insn<<6)) >> 4 // imm26 × 4, sign-extended
			if text.Addr+uint64(i)+uint64(imm) == entry {
				n++
			}
		}
	}
	return n
}

// noiseOffsets: where HandshakeState keeps its local static and ephemeral private keys, from the
// binary's DWARF when it has it, else from the table by flynn/noise version.
func noiseOffsets(ef *elf.File, version string) (noiseLayout, error) {
	if d, err := ef.DWARF(); err == nil {
		if l, ok := dwarfNoiseLayout(d); ok {
			return l, nil
		}
	}
	if l, ok := noiseLayouts[strings.Fields(version)[0]]; ok {
		return l, nil
	}
	return noiseLayout{}, fmt.Errorf("flynn/noise %s: its HandshakeState layout is not known and the program has no DWARF: no Noise keys", version)
}

// dwarfNoiseLayout reads HandshakeState's fields s and e and DHKey's Private from DWARF.
func dwarfNoiseLayout(d *dwarf.Data) (noiseLayout, bool) {
	state := structFields(d, "github.com/flynn/noise.HandshakeState")
	key := structFields(d, "github.com/flynn/noise.DHKey")
	if ss, ok := state["ss"]; !ok || ss != 0 {
		return noiseLayout{}, false // MixHash's receiver would not be the state (keys.bpf.c)
	}
	s, okS := state["s"]
	e, okE := state["e"]
	priv, okP := key["Private"]
	if !okS || !okE || !okP {
		return noiseLayout{}, false
	}
	return noiseLayout{uint64(s + priv), uint64(e + priv)}, true
}

func structFields(d *dwarf.Data, name string) map[string]int64 {
	r := d.Reader()
	for {
		entry, err := r.Next()
		if err != nil || entry == nil {
			return nil
		}
		if entry.Tag != dwarf.TagStructType || entry.Val(dwarf.AttrName) != name {
			continue
		}
		t, err := d.Type(entry.Offset)
		st, ok := t.(*dwarf.StructType)
		if err != nil || !ok {
			return nil
		}
		fields := map[string]int64{}
		for _, f := range st.Field {
			fields[f.Name] = f.ByteOffset
		}
		return fields
	}
}

// describe is the line `p2pc keys` prints when it attaches.
func (t *target) describe() string {
	var b bytes.Buffer
	if t.openssl != "" {
		fmt.Fprintf(&b, "pid %d (%s): %s, %s", t.pid, t.path, t.openssl, t.lib)
	} else {
		fmt.Fprintf(&b, "pid %d (%s): %s, go-libp2p %s", t.pid, t.path, t.goVersion, t.libp2p)
	}
	if t.noise != "" {
		fmt.Fprintf(&b, ", flynn/noise %s", t.noise)
	}
	names := make([]string, len(t.points))
	for i, p := range t.points {
		names[i] = p.function
	}
	fmt.Fprintf(&b, ": probing %s", strings.Join(names, ", "))
	return b.String()
}

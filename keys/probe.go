package main

// Loading keys.bpf.c and attaching its entry probes, with cilium/ebpf: multi-uprobe links where
// the kernel has them (Linux 6.6+; CAP_BPF and CAP_PERFMON are enough), else one perf-event
// uprobe each (CAP_SYS_ADMIN).  Every probe is a link owned by this process: closing it, or this
// process ending in any way, detaches it, and the traced program runs on untouched.

//go:generate go tool bpf2go -type key_event -target $GOARCH keys bpf/keys.bpf.c -- -O2 -g -Wall -Werror -I/usr/include/$MULTIARCH

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// programs is one flavour of the three probes (keys.bpf.c defines each twice).
type programs struct {
	tls, noise, openssl *ebpf.Program
	multi               bool
}

type probes struct {
	objs  keysObjects
	progs programs
	links []link.Link
}

// load loads the BPF objects, or says in one line why it may not.  single: the per-probe
// programs only, as on a kernel before 6.6 (--uprobes single).
func load(single bool) (*probes, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, permission(err)
	}
	p := &probes{}
	if single {
		return p, p.loadSingle(nil)
	}
	if err := loadKeysObjects(&p.objs, nil); err != nil {
		// A kernel before 6.6 refuses the multi-uprobe programs: load the per-probe ones only.
		return p, p.loadSingle(err)
	}
	p.progs = programs{p.objs.MultiTlsKeyLog, p.objs.MultiNoiseKeys, p.objs.MultiOpensslKeys, true}
	return p, nil
}

// loadSingle loads the per-probe programs and the maps only; refused is why the whole set was
// refused, if it was (the error said when these are refused too).
func (p *probes) loadSingle(refused error) error {
	spec, err := loadKeys()
	if err != nil {
		return err
	}
	delete(spec.Programs, "multi_tls_key_log")
	delete(spec.Programs, "multi_noise_keys")
	delete(spec.Programs, "multi_openssl_keys")
	var single struct {
		SingleTlsKeyLog   *ebpf.Program `ebpf:"single_tls_key_log"`
		SingleNoiseKeys   *ebpf.Program `ebpf:"single_noise_keys"`
		SingleOpensslKeys *ebpf.Program `ebpf:"single_openssl_keys"`
		Events            *ebpf.Map     `ebpf:"events"`
		Lost              *ebpf.Map     `ebpf:"lost"`
		OpensslSent       *ebpf.Map     `ebpf:"openssl_sent"`
	}
	if err := spec.LoadAndAssign(&single, nil); err != nil {
		if refused != nil {
			err = refused
		}
		return permission(err)
	}
	p.objs.Events, p.objs.Lost, p.objs.OpensslSent = single.Events, single.Lost, single.OpensslSent
	p.objs.SingleTlsKeyLog, p.objs.SingleNoiseKeys = single.SingleTlsKeyLog, single.SingleNoiseKeys
	p.objs.SingleOpensslKeys = single.SingleOpensslKeys
	p.progs = programs{single.SingleTlsKeyLog, single.SingleNoiseKeys, single.SingleOpensslKeys, false}
	return nil
}

// flavour names how the probes are attached, for the line that names them.
func (p *probes) flavour() string {
	if p.progs.multi {
		return "multi-uprobe links"
	}
	return "one uprobe each"
}

// attach sets t's probes, all or none.
func (p *probes) attach(t *target) error {
	ex, err := link.OpenExecutable(t.exe)
	if err != nil {
		return fmt.Errorf("pid %d: %v", t.pid, err)
	}
	var added []link.Link
	for _, pt := range t.points {
		l, err := p.attachOne(ex, t.pid, pt)
		if errors.Is(err, link.ErrNotSupported) && p.progs.multi {
			// The programs loaded but the kernel has no multi-uprobe link: per-probe ones.
			p.progs = programs{p.objs.SingleTlsKeyLog, p.objs.SingleNoiseKeys, p.objs.SingleOpensslKeys, false}
			l, err = p.attachOne(ex, t.pid, pt)
		}
		if err != nil {
			for _, a := range added {
				a.Close()
			}
			return fmt.Errorf("pid %d: attaching to %s: %w", t.pid, pt.function, permission(err))
		}
		added = append(added, l)
	}
	p.links = append(p.links, added...)
	return nil
}

// attachOne sets pt's probe with the program of its kind, in the flavour loaded.
func (p *probes) attachOne(ex *link.Executable, pid int, pt probePoint) (link.Link, error) {
	prog := p.progs.tls
	switch pt.kind {
	case pointNoise:
		prog = p.progs.noise
	case pointOpenSSL:
		prog = p.progs.openssl
	}
	if p.progs.multi {
		return ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{
			Addresses: []uint64{pt.offset}, Cookies: []uint64{pt.cookie}, PID: uint32(pid)})
	}
	return ex.Uprobe(pt.function, prog, &link.UprobeOptions{Address: pt.offset, Cookie: pt.cookie, PID: pid})
}

// detach closes every probe: no key event is made after it returns.
func (p *probes) detach() {
	for _, l := range p.links {
		l.Close()
	}
	p.links = nil
}

// lost is the number of key events the ring buffer had no room for.
func (p *probes) lost() uint64 {
	var perCPU []uint64
	if err := p.objs.Lost.Lookup(uint32(0), &perCPU); err != nil {
		return 0
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n
}

func (p *probes) close() {
	p.detach()
	p.objs.Close()
}

// permission turns the kernel's EPERM into what to grant.
func permission(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("not permitted (%v): p2pc keys needs CAP_BPF and CAP_PERFMON (Linux 6.6+), or CAP_SYS_ADMIN on older kernels, and CAP_SYS_PTRACE for another user's process: run it as root, or sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep on the p2pc-keys program", err)
	}
	return err
}

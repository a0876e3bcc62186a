// p2pc-keys: append the session keys of running, unmodified go-libp2p programs (and of programs
// that link OpenSSL's libssl dynamically, on amd64: openssl.go) to a key log as they are
// made, read with entry uprobes (keys.bpf.c).  `p2pc keys` runs it; so does
// `p2pc live --keys-from` (docs/libp2p-decryption.md, "Keys from a running node").
//
//	p2pc-keys --pid PID [--pid PID ...] --output FILE [--duration 10m]
//
// It stops on SIGINT or SIGTERM, after --duration, or when every process it probes has ended;
// then it detaches, writes every key still in the ring buffer, and exits.  Exit status: 0, 1 on
// a failure while running, 2 when nothing could be attached (one line says why).
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/cilium/ebpf/ringbuf"
)

type pidList []int

func (l *pidList) String() string { return fmt.Sprint(*l) }
func (l *pidList) Set(s string) error {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return fmt.Errorf("not a process ID: %q", s)
	}
	*l = append(*l, pid)
	return nil
}

func main() {
	var pids pidList
	flag.Var(&pids, "pid", "a process to read keys from (repeat for several)")
	output := flag.String("output", "", "the key log to append to (created 0600)")
	duration := flag.Duration("duration", 0, "stop after this long (default: until SIGINT/SIGTERM or every process has ended)")
	uprobes := flag.String("uprobes", "auto", "auto: multi-uprobe links where the kernel has them (6.6+); single: one uprobe per function, as before 6.6")
	flag.Parse()
	if len(pids) == 0 || *output == "" || flag.NArg() > 0 || (*uprobes != "auto" && *uprobes != "single") {
		fmt.Fprintln(os.Stderr, "usage: p2pc-keys --pid PID [--pid PID ...] --output FILE [--duration D] [--uprobes auto|single]")
		os.Exit(2)
	}
	os.Exit(run(pids, *output, *duration, *uprobes == "single"))
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "p2pc keys: "+format+"\n", args...)
	return 2
}

func run(pids []int, output string, duration time.Duration, single bool) int {
	// From the start: a signal while attaching still ends in the orderly stop below.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var targets []*target
	for _, pid := range pids {
		t, err := inspect(pid)
		if err != nil {
			return fail("%v", err)
		}
		targets = append(targets, t)
	}
	log, err := openKeyLog(output)
	if err != nil {
		return fail("%v", err)
	}
	defer log.close()
	p, err := load(single)
	if err != nil {
		return fail("loading the probes: %v", err)
	}
	defer p.close()
	rd, err := ringbuf.NewReader(p.objs.Events)
	if err != nil {
		return fail("%v", err)
	}
	defer rd.Close()
	for _, t := range targets {
		if err := p.attach(t); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(os.Stderr, "p2pc keys: %s (%s)\n", t.describe(), p.flavour())
		for _, w := range t.warnings {
			fmt.Fprintf(os.Stderr, "p2pc keys: pid %d: %s\n", t.pid, w)
		}
	}

	// The first of a signal, --duration and the processes' end stops the probes; the reading
	// below then takes what is left in the ring buffer and ends at ErrFlushed.
	reasons := make(chan string, 3)
	go func() { reasons <- (<-sig).String() }()
	if duration > 0 {
		go func() { time.Sleep(duration); reasons <- "--duration" }()
	}
	go func() { waitGone(pids); reasons <- "every process ended" }()
	why := make(chan string, 1)
	go func() { r := <-reasons; p.detach(); rd.Flush(); why <- r }()

	status := 0
	var rec ringbuf.Record
	var e keysKeyEvent
	for {
		err := rd.ReadInto(&rec)
		if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) {
			break
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "p2pc keys: reading the ring buffer: %v\n", err)
			status = 1
			break
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e); err != nil {
			continue
		}
		if err := log.add(&e); err != nil {
			fmt.Fprintf(os.Stderr, "p2pc keys: writing %s: %v\n", output, err)
			status = 1
			break
		}
	}
	msg := fmt.Sprintf("p2pc keys: stopped (%s): %d TLS and %d Noise key lines written to %s", <-why, log.tls, log.noise, output)
	if n := p.lost(); n > 0 {
		msg += fmt.Sprintf("; %d keys lost (the ring buffer was full)", n)
		status = 1
	}
	fmt.Fprintln(os.Stderr, msg)
	return status
}

// waitGone returns when none of pids is running.
func waitGone(pids []int) {
	for {
		alive := false
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
				alive = true
			}
		}
		if !alive {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

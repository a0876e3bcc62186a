module github.com/p2pc/keys

go 1.24.0

require (
	github.com/cilium/ebpf v0.20.0
	golang.org/x/arch v0.24.0
)

require golang.org/x/sys v0.37.0 // indirect

tool github.com/cilium/ebpf/cmd/bpf2go

#!/bin/sh
# Reprints the rust-libp2p figures of docs/libp2p-decryption.md ("Tried beyond go"): builds
# tools/keys-map-rust (two rust-libp2p 0.57.1 peers, snow 0.10.0, one Noise+yamux handshake over TCP)
# with Cargo's default release profile, with Lighthouse's maxperf (fat LTO, one codegen unit) and
# with release plus full debuginfo; runs each; prints its size, whether it has DWARF, and for
# snow's handshake functions and libp2p-noise's X25519 Keypair whether a symbol is left, how many
# call sites reach it and how many slots (GOT or vtable) hold its address, the code of
# Keypair::privkey (where Keypair keeps its private key); with DWARF, where HandshakeState keeps
# the local static and ephemeral keys (gdb's ptype/o).
# Not run in CI: three builds from crates.io, about 3, 4 and 3 minutes on 2 busy cores.
# Needs cargo, binutils and gdb.  CARGO_TARGET_DIR defaults to /tmp/p2pc-keys-map-rust.
set -eu
crate=$(cd "$(dirname "$0")" && pwd)/keys-map-rust
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/p2pc-keys-map-rust}"
funcs='snow::handshakestate::HandshakeState::read_message
snow::handshakestate::HandshakeState::write_message
snow::symmetricstate::SymmetricState::split
<libp2p_noise::protocol::Keypair as snow::types::Dh>::dh'
privkey='<libp2p_noise::protocol::Keypair as snow::types::Dh>::privkey'

# The address of the symbol named $2 (demangled) in program $1, hex without leading zeros.
address() {
    nm -C "$1" | awk -v f="$2" '{ a = $1; $1 = ""; $2 = ""; sub(/^  /, "") } $0 == f { sub(/^0+/, "", a); print a; exit }'
}

# The slots the dynamic linker fills with the address $2 in program $1 (GOT entries, vtables).
slots() {
    readelf -rW "$1" | awk -v a="$2" '$3 == "R_X86_64_RELATIVE" && $4 == a { sub(/^0+/, "", $1); print $1 }'
}

# Call sites of the function at $3 in disassembly $2 of program $1: direct calls and tail jumps,
# and those through a GOT slot holding its address (Rust builds position-independent programs
# without a PLT: `call *slot(%rip)`).  A call through a vtable is not counted: it names no slot.
sites() {
    n=$(grep -cE "(call|jmp) +$3 <" "$2" || true)
    for slot in $(slots "$1" "$3"); do
        n=$((n + $(grep -cE "(call|jmp) +\*.*# $slot <" "$2" || true)))
    done
    echo "$n"
}

for profile in release maxperf dwarf; do
    nice -n 10 cargo build --manifest-path "$crate/Cargo.toml" --profile "$profile" --locked -q
    bin="$CARGO_TARGET_DIR/$profile/noise-pair"
    "$bin" | grep '^handshake ok' >/dev/null || { echo "$profile: no handshake" >&2; exit 1; }
    asm="$CARGO_TARGET_DIR/$profile/noise-pair.asm"
    objdump -d --no-show-raw-insn "$bin" >"$asm"
    dwarf=no
    readelf -S "$bin" | grep -q '\.debug_info' && dwarf=yes
    echo "$profile: $(stat -c %s "$bin") bytes, handshake ok, DWARF $dwarf"
    echo "$funcs" | while read -r f; do
        addr=$(address "$bin" "$f")
        if [ -n "$addr" ]; then
            echo "  $f: symbol, call sites $(sites "$bin" "$asm" "$addr"), slots $(slots "$bin" "$addr" | wc -l)"
        else echo "  $f: no symbol (inlined into its callers)"; fi
    done
    addr=$(address "$bin" "$privkey")
    echo "  $privkey:$(awk -v a="$addr:" '$1 == a { on = 1 } on { $1 = ""; sub(/^ /, ""); printf " %s;", $0 } on && /ret/ { exit }' "$asm")"
    if [ "$dwarf" = yes ]; then
        gdb -batch -nx -ex 'ptype/o snow::handshakestate::HandshakeState' "$bin" 2>/dev/null |
            grep -E '^/\* +[0-9]+ .*\b(s|e|symmetricstate|cipherstates): ' | sed 's/^/  HandshakeState /'
        gdb -batch -nx -ex 'ptype/o libp2p_noise::protocol::Keypair' "$bin" 2>/dev/null |
            grep -E '^/\* +[0-9]+ .*\bsecret: ' | sed 's/^/  libp2p_noise Keypair /'
    fi
done

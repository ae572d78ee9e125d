# An emulated WAN for the benchmark: two network namespaces of our own, a client and a server,
# joined by one TUN device each and rf-wanem (rf-wanem.c) as the wire between them. Sourced by
# scripts/bench.sh; needs root, iproute2 and /dev/net/tun.
#
#   client netns  127.204.0.1 --rfwan0--> rf-wanem (rate, delay, loss) --rfwan0--> 127.204.0.2  server netns
#
# Why namespaces and 127.x: this kernel has no netem, and traffic may only go to 127.0.0.0/8 or to
# namespaces we create. Both ends get 127.204.0.x addresses on their TUN device, which the kernel
# accepts only with route_localnet=1, set inside our namespaces alone: nothing in the root
# namespace changes, and `ip netns del` takes the devices, addresses and routes with it.
#
# Link settings, from the environment (defaults: the issue's "400 Mbit/s, 20 ms, 0.1% loss"):
: "${BENCH_WAN_RATE_MBIT:=400}" # link rate, Mbit/s (10^6 bit/s), each direction
: "${BENCH_WAN_DELAY_MS:=20}"   # round trip, ms, all of it on server->client (netem on the server's NIC)
: "${BENCH_WAN_LOSS_PCT:=0.1}"  # random loss, percent of server->client (data) packets
: "${BENCH_WAN_QUEUE_MS:=50}"   # drop-tail buffer in front of the link, ms of link time
: "${BENCH_WAN_CC:=cubic}"      # TCP congestion control of both ends: what most servers run
: "${BENCH_WAN_SEED:=1}"        # seed of the loss pattern (the same packets drop in every run)
: "${BENCH_WAN_MTU:=1500}"      # bytes; rf-wanem carries packets up to 2048

RF_WAN_DEVICE=rfwan0
RF_WAN_CLIENT_IP=127.204.0.1
RF_WAN_SERVER_IP=127.204.0.2
# Namespace names carry our pid, so two benchmarks never share (or delete) each other's.
RF_WAN_CLIENT_NS="rfbench-$$-cli"
RF_WAN_SERVER_NS="rfbench-$$-srv"

# rf_wan_describe: the link in words, for the results.
rf_wan_describe() {
    echo "$BENCH_WAN_RATE_MBIT Mbit/s, ${BENCH_WAN_DELAY_MS} ms round trip," \
         "${BENCH_WAN_LOSS_PCT}% loss server->client, ${BENCH_WAN_QUEUE_MS} ms queue," \
         "MTU $BENCH_WAN_MTU, TCP $BENCH_WAN_CC"
}

# rf_wan_reap_stale: deletes namespaces left by an earlier benchmark that was SIGKILLed (its pid,
# part of the name, no longer runs). Never touches a running benchmark's namespaces.
rf_wan_reap_stale() {
    local ns pid
    for ns in $(ip netns list | awk '{print $1}' | grep -E '^rfbench-[0-9]+-(cli|srv)$' || true); do
        pid=${ns#rfbench-}
        pid=${pid%%-*}
        kill -0 "$pid" 2>/dev/null || ip netns del "$ns"
    done
}

# rf_wan_namespace NS IP PEER: a namespace whose only way out is its TUN device, toward PEER.
rf_wan_namespace() {
    local ns=$1 ip=$2 peer=$3
    ip netns add "$ns"
    ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.route_localnet=1 \
        net.ipv4.conf.default.route_localnet=1 net.ipv4.conf.all.rp_filter=0 \
        net.ipv4.conf.default.rp_filter=0
    # lo carries connections to our own address (nginx's readiness check). Bringing it up makes
    # the kernel claim all of 127.0.0.0/8 as local. The peer's /32 route still wins while the local
    # and main tables are merged, but not once a policy rule splits them; keep only 127.0.0.1 local,
    # so the peer's 127.204.0.x always leaves through the TUN device instead of looping back.
    ip -n "$ns" link set lo up
    ip -n "$ns" route del local 127.0.0.0/8 dev lo table local
    ip -n "$ns" tuntap add dev "$RF_WAN_DEVICE" mode tun
    ip -n "$ns" link set "$RF_WAN_DEVICE" mtu "$BENCH_WAN_MTU"
    ip -n "$ns" addr add "$ip" peer "$peer" dev "$RF_WAN_DEVICE"
    ip -n "$ns" link set "$RF_WAN_DEVICE" up
    # Congestion control per route: a namespace may not make an algorithm its default unless the
    # root namespace allows it (tcp_allowed_congestion_control), but a route may name any.
    ip -n "$ns" route replace "$peer" dev "$RF_WAN_DEVICE" src "$ip" congctl "$BENCH_WAN_CC"
}

# rf_wan_up STATE_DIR WANEM_BINARY: creates both namespaces and starts the line (pid in
# STATE_DIR/wanem.pid, counters in STATE_DIR/wanem.log when it stops).
rf_wan_up() {
    local dir=$1 wanem=$2
    if [ "$BENCH_WAN_MTU" -gt 2000 ]; then
        echo "BENCH_WAN_MTU=$BENCH_WAN_MTU: rf-wanem carries packets of at most 2000 bytes" >&2
        return 1
    fi
    [ -c /dev/net/tun ] || { echo "no /dev/net/tun: the WAN scenario needs TUN devices" >&2; return 1; }
    mkdir -p "$dir"
    rf_wan_namespace "$RF_WAN_CLIENT_NS" "$RF_WAN_CLIENT_IP" "$RF_WAN_SERVER_IP"
    rf_wan_namespace "$RF_WAN_SERVER_NS" "$RF_WAN_SERVER_IP" "$RF_WAN_CLIENT_IP"
    rm -f "$dir/wanem.pid"
    # The line runs at a higher priority than the tools it carries: on two cores a starved line
    # would add delay that is not part of the emulated link. (The tools still share the cores.)
    nice -n -10 "$wanem" -r "$BENCH_WAN_RATE_MBIT" -d "$BENCH_WAN_DELAY_MS" -u 0 \
        -l "$BENCH_WAN_LOSS_PCT" -L 0 -q "$BENCH_WAN_QUEUE_MS" -s "$BENCH_WAN_SEED" \
        -p "$dir/wanem.pid" "$RF_WAN_CLIENT_NS" "$RF_WAN_SERVER_NS" "$RF_WAN_DEVICE" \
        2>"$dir/wanem.log" &
    local i
    for i in $(seq 1 50); do
        [ -s "$dir/wanem.pid" ] && return 0
        kill -0 $! 2>/dev/null || break
        sleep 0.1
    done
    echo "rf-wanem did not start: $(cat "$dir/wanem.log")" >&2
    return 1
}

# rf_wan_down STATE_DIR: stops the line by its pid, prints its counters, deletes both namespaces.
rf_wan_down() {
    local dir=$1
    if [ -s "$dir/wanem.pid" ]; then
        local pid i
        pid=$(cat "$dir/wanem.pid")
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$dir/wanem.pid"
        sed 's/^/bench: /' "$dir/wanem.log" >&2 || true
    fi
    local ns
    for ns in "$RF_WAN_CLIENT_NS" "$RF_WAN_SERVER_NS"; do
        ip netns list | grep -qw "^$ns" && ip netns del "$ns"
    done
    return 0
}

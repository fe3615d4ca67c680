package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// ephemeralRangeFile is where Linux keeps the range it takes the local
// ports of outgoing connections from.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// lowestPort is the bottom of the range freePorts draws from: above the
// well-known and most registered service ports.
const lowestPort = 20000

// freePorts picks three distinct ports for etcd and the API server that are
// free now and lie outside the kernel's ephemeral range. The ports stay
// unbound from here until the servers bind them (certificates, then etcd's
// start, come between), and a port of the ephemeral range can meanwhile
// become the local port of any outgoing connection on the machine, of which
// clusters started side by side (make conformance's lanes, the matrix) open
// hundreds; the server would then fail with "address already in use".
func freePorts() (ports, error) {
	lo, hi := ephemeralRange()
	got, err := pickPorts(3, lo, hi, canListen)
	if err != nil {
		return ports{}, err
	}
	return ports{etcd: got[0], etcdPeer: got[1], apiserver: got[2]}, nil
}

// pickPorts draws n distinct ports from [lowestPort, 65535] outside the
// ephemeral range [lo, hi] for which free reports true.
func pickPorts(n, lo, hi int, free func(int) bool) ([]int, error) {
	var candidates []int
	for p := lowestPort; p <= 65535; p++ {
		if p < lo || p > hi {
			candidates = append(candidates, p)
		}
	}
	rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	var got []int
	for _, p := range candidates {
		if len(got) == n {
			break
		}
		if free(p) {
			got = append(got, p)
		}
	}
	if len(got) < n {
		return nil, fmt.Errorf("no %d free ports in %d-65535 outside the ephemeral range %d-%d (%s)", n, lowestPort, lo, hi, ephemeralRangeFile)
	}
	return got, nil
}

// ephemeralRange reads the kernel's ephemeral port range, or Linux's
// default when it cannot be read.
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return 32768, 60999
	}
	if lo, hi, ok := parseRange(string(b)); ok {
		return lo, hi
	}
	return 32768, 60999
}

// parseRange parses the file's "LOW<tab>HIGH".
func parseRange(s string) (lo, hi int, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return 0, 0, false
	}
	return lo, hi, true
}

// canListen reports whether nothing listens on 127.0.0.1:port now.
func canListen(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

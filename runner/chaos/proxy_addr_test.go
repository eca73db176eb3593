package chaos

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestStableAddr: on Linux a proxy's port lies below the ephemeral range,
// where no outgoing connection takes it while a cut link is closed.
func TestStableAddr(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ephemeral port range to read here:", err)
	}
	lo, _ := strconv.Atoi(strings.Fields(string(b))[0])
	for range 20 {
		_, port, err := net.SplitHostPort(stableAddr())
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(port); n == 0 || n >= lo {
			t.Fatalf("port %s; want one below the ephemeral range (from %d)", port, lo)
		}
	}
}

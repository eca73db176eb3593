package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxies are in-process TCP proxies (Shopify toxiproxy used as a
// library, no API server) between the actors and the database or the
// broker, one per link, so that the nemesis can delay or cut one link
// without touching the others.
type Proxies struct {
	server *toxiproxy.ApiServer

	mu    sync.Mutex
	links map[string]*Link
}

// NewProxies returns an empty set of proxies.
func NewProxies() *Proxies {
	return &Proxies{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		links:  map[string]*Link{},
	}
}

// Link is one proxy: the actor connects to Addr, the proxy to upstream.
type Link struct {
	Name     string // "relay-1>database"
	Addr     string // where the actor connects
	Upstream string
	p        *toxiproxy.Proxy

	mu          sync.Mutex
	cut         bool
	latency     bool
	commitsLost bool
	lostToxic   *commitLostToxic // the last LoseCommits's, kept after Heal for CommitsLost
}

// Add starts a proxy named name (a link "actor>component") on a free
// loopback port in front of upstream (stableAddr).
func (ps *Proxies) Add(name, upstream string) (*Link, error) {
	var p *toxiproxy.Proxy
	var err error
	for range 5 { // another process may take the port between the check and the start
		p = toxiproxy.NewProxy(ps.server, name, stableAddr(), upstream)
		if err = p.Start(); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	l := &Link{Name: name, Addr: p.Listen, Upstream: upstream, p: p}
	ps.mu.Lock()
	ps.links[name] = l
	ps.mu.Unlock()
	return l, nil
}

// Link returns the proxy named name, or nil.
func (ps *Proxies) Link(name string) *Link {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.links[name]
}

// Close stops every proxy (dropping their connections).
func (ps *Proxies) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, l := range ps.links {
		l.p.Stop()
	}
}

// Delay adds d of latency to every packet in both directions until Heal.
func (l *Link) Delay(d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.latency {
		return nil
	}
	ms := d.Milliseconds()
	for _, dir := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`,
			dir, dir, ms, ms/4)
		if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("proxy %s: add latency: %w", l.Name, err)
		}
	}
	l.latency = true
	return nil
}

// LoseCommits makes every COMMIT the link carries to its upstream, on its
// open connections and new ones, be lost until Heal: the COMMIT is not
// delivered and its connection is closed (commitLostToxic).
func (l *Link) LoseCommits() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commitsLost {
		return nil
	}
	js := `{"name":"commit_lost","type":"` + commitLostType + `","stream":"upstream"}`
	w, err := l.p.Toxics.AddToxicJson(strings.NewReader(js))
	if err != nil {
		return fmt.Errorf("proxy %s: lose commits: %w", l.Name, err)
	}
	l.lostToxic, _ = w.Toxic.(*commitLostToxic)
	l.commitsLost = true
	return nil
}

// CommitsLost is how many COMMITs the last LoseCommits dropped, until
// now or until its Heal: zero says the fault met no transaction's end.
func (l *Link) CommitsLost() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostToxic == nil {
		return 0
	}
	return l.lostToxic.lost.Load()
}

// Cut drops every connection of the link and refuses new ones until Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut {
		l.p.Stop()
		l.cut = true
	}
}

// Heal removes the latency and the lost commits and reopens a cut link on
// the same address.
func (l *Link) Heal(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commitsLost {
		if err := l.p.Toxics.RemoveToxic(ctx, "commit_lost"); err != nil {
			return fmt.Errorf("proxy %s: stop losing commits: %w", l.Name, err)
		}
		l.commitsLost = false
	}
	if l.latency {
		for _, dir := range []string{"upstream", "downstream"} {
			if err := l.p.Toxics.RemoveToxic(ctx, "latency_"+dir); err != nil {
				return fmt.Errorf("proxy %s: remove latency: %w", l.Name, err)
			}
		}
		l.latency = false
	}
	if l.cut {
		var err error
		for attempt := 0; attempt < 20; attempt++ { // the port may take a moment to be free
			if err = l.p.Start(); err == nil {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("proxy %s: reopen on %s: %w", l.Name, l.Addr, err)
		}
		l.cut = false
	}
	return nil
}

// stableAddr returns a free loopback address whose port lies below the
// system's ephemeral port range, or "127.0.0.1:0" where that range is not
// known. A cut link is reopened on its own address (Heal), and a port of
// the ephemeral range may meanwhile be taken by any outgoing connection
// of the machine: a chaos run under CI's parallel tests once failed to
// reopen one ("bind: address already in use").
func stableAddr() string {
	lo := 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, _ = strconv.Atoi(f[0])
		}
	}
	const first = 10000
	if lo <= first+1000 {
		return "127.0.0.1:0"
	}
	for range 50 {
		addr := "127.0.0.1:" + strconv.Itoa(first+rand.IntN(lo-first))
		if l, err := net.Listen("tcp", addr); err == nil {
			_ = l.Close()
			return addr
		}
	}
	return "127.0.0.1:0"
}

package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// network delays or cuts the link named by f.Target.
func (r *run) network(f nemesis.Fault) (string, heal, error) {
	l := r.t.Links.Link(f.Target)
	if l == nil {
		return "", nil, fmt.Errorf("no proxy for link %s", f.Target)
	}
	var detail string
	if f.Kind == nemesis.Latency {
		if err := l.Delay(f.Delay); err != nil {
			return "", nil, err
		}
		detail = fmt.Sprintf("the proxy %s -> %s delays every packet by %v (each way) for %v", l.Addr, l.Upstream, f.Delay,
			f.For.Round(time.Millisecond))
	} else {
		l.Cut()
		detail = fmt.Sprintf("the proxy %s -> %s dropped its connections and refuses new ones for %v", l.Addr, l.Upstream,
			f.For.Round(time.Millisecond))
	}
	return detail, func(ctx context.Context) (string, error) {
		if err := l.Heal(ctx); err != nil {
			return "", err
		}
		return "the link " + f.Target + " carries traffic normally again", nil
	}, nil
}

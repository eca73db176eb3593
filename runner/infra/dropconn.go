package infra

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errDropped is what the embedded broker's control returns to close a
// client's connection.
var errDropped = errors.New("ofa: the broker closed the connection")

// DropNext makes the embedded broker close the connection of the next
// request of key it reads, without answering it (kfake closes a client's
// connection when a control function returns an error); the client sees
// its connection die. It returns ErrNoBrokerControl for an external
// cluster.
func (k *Kafka) DropNext(key kmsg.Key) error {
	if k.cluster == nil {
		return ErrNoBrokerControl
	}
	k.cluster.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errDropped, true
	})
	return nil
}

// Embedded tells whether the broker is the embedded one (kfake), which can
// be told to fail requests.
func (k *Kafka) Embedded() bool { return k.cluster != nil }

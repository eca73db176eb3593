package chaos

import (
	"bytes"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// commitLostToxic drops a client's COMMIT on its way to the server and
// closes the connection instead: the server rolls the transaction back,
// and the client, whose COMMIT got no answer, cannot know (an unknown
// outcome, as when a network drops at the commit). Other traffic passes.
// It reads the MySQL protocol only as far as it must: a chunk that starts
// with a COM_QUERY packet whose text is COMMIT (any case, with blanks or a
// trailing semicolon), which is how go-sql-driver, PyMySQL and JDBC
// drivers commit. It counts the COMMITs it dropped (Link.CommitsLost).
type commitLostToxic struct {
	lost atomic.Int64
}

func (t *commitLostToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil || isCommit(c.Data) {
				if c != nil {
					t.lost.Add(1)
				}
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

func init() {
	toxics.Register(commitLostType, new(commitLostToxic))
}

// commitLostType is the toxic's registered type.
const commitLostType = "ofa_commit_lost"

// comQuery is the MySQL protocol's COM_QUERY command byte.
const comQuery = 0x03

// isCommit says whether b starts with a MySQL packet that is a COM_QUERY
// of COMMIT: a 3-byte little-endian payload length, a sequence number,
// then the payload (the command byte and the statement text).
func isCommit(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if n < 1 || len(b) < 4+n || b[4] != comQuery {
		return false
	}
	text := bytes.TrimRight(bytes.TrimSpace(b[5:4+n]), "; \t\r\n")
	return bytes.EqualFold(text, []byte("COMMIT"))
}

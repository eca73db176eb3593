package consumer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// HeaderEventID is the record header that carries the outbox event id (the
// relay writes it).
const HeaderEventID = "event_id"

// ErrBadRecord is returned for a record whose identity cannot be read or is
// contradictory: no event id, a payload that is not a JSON object, an
// orderId that is not an integer, or identity fields that disagree.
var ErrBadRecord = errors.New("bad record")

// Identity is what the consumer takes from a record: the event id (header)
// and the order id (payload field orderId, parsed as a JSON number).
type Identity struct {
	EventID string
	OrderID int64
}

// ParseIdentity reads a record's identity by parsing, never by substring:
// `"orderId":3` is a substring of `"orderId":30`, and MariaDB stores JSON
// as text without normalising it. The event id comes from the event_id
// header; a payload eventId, when present, must agree with it (and stands
// in for a missing header). orderId must be an integer JSON number at the
// top level of the payload object; the record key, when present, must be
// that number in decimal.
func ParseIdentity(r *kgo.Record) (Identity, error) {
	var id Identity
	for _, h := range r.Headers {
		if h.Key == HeaderEventID {
			id.EventID = string(h.Value)
		}
	}

	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return id, fmt.Errorf("%w: payload is not a JSON object: %v", ErrBadRecord, err)
	}
	if dec.More() {
		return id, fmt.Errorf("%w: trailing data after the payload object", ErrBadRecord)
	}

	raw, ok := fields["orderId"]
	if !ok {
		return id, fmt.Errorf("%w: payload has no orderId", ErrBadRecord)
	}
	var v any
	nd := json.NewDecoder(bytes.NewReader(raw))
	nd.UseNumber()
	err := nd.Decode(&v)
	num, isNum := v.(json.Number) // a quoted "5" decodes to a string, not a Number
	if err != nil || !isNum {
		return id, fmt.Errorf("%w: orderId %s is not a number", ErrBadRecord, raw)
	}
	oid, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil {
		return id, fmt.Errorf("%w: orderId %s is not an integer", ErrBadRecord, num)
	}
	id.OrderID = oid

	if raw, ok := fields["eventId"]; ok {
		var pe string
		if err := json.Unmarshal(raw, &pe); err != nil {
			return id, fmt.Errorf("%w: payload eventId %s is not a string", ErrBadRecord, raw)
		}
		switch {
		case id.EventID == "":
			id.EventID = pe
		case id.EventID != pe:
			return id, fmt.Errorf("%w: header event_id %q and payload eventId %q disagree", ErrBadRecord, id.EventID, pe)
		}
	}
	if id.EventID == "" {
		return id, fmt.Errorf("%w: no event_id header", ErrBadRecord)
	}
	if len(id.EventID) > 64 {
		return id, fmt.Errorf("%w: event id longer than 64 characters", ErrBadRecord)
	}
	if r.Key != nil {
		k, err := strconv.ParseInt(string(r.Key), 10, 64)
		if err != nil || k != id.OrderID {
			return id, fmt.Errorf("%w: key %q does not match orderId %d", ErrBadRecord, r.Key, id.OrderID)
		}
	}
	return id, nil
}

package blackbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strconv"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// decoded is what an outbox row's payload column says the record must be:
// its value, the headers it must carry, and the topic it is for (empty:
// the profile's).
type decoded struct {
	value   []byte
	headers map[string]string
	topic   string
}

// watermillUUIDHeader is the header watermill-kafka's default marshaler
// puts a message's uuid in.
const watermillUUIDHeader = "_watermill_message_uuid"

// decode runs the profile's decoder on a payload column's value. One
// decoder per known envelope; the schema's enum lists the same names.
// The value it gives may be v's own bytes (the binlog event's buffer):
// the caller reads it, never keeps it.
func decode(name string, v any) (decoded, error) {
	switch name {
	case profile.DecodeNone, "":
		return decoded{value: raw(v)}, nil
	case profile.DecodeWatermill:
		return decodeWatermill(raw(v))
	}
	return decoded{}, fmt.Errorf("unknown decoder %q", name)
}

// raw is the payload's bytes: the row's own (the binlog event's buffer:
// read them, never keep them).
func raw(v any) []byte {
	switch t := v.(type) {
	case nil:
		return nil
	case []byte:
		return t
	case string:
		return unsafe.Slice(unsafe.StringData(t), len(t))
	}
	s, _ := profile.Text(v)
	return []byte(s)
}

// decodeWatermill reads Watermill's forwarder envelope, the JSON its
// forwarder.Publisher stores in the payload column of watermill_<topic>:
// {"destination_topic", "uuid", "payload" (base64), "metadata"}. The
// forwarder publishes the inner message: the payload as the value, the
// metadata as headers, and the uuid in watermillUUIDHeader.
func decodeWatermill(b []byte) (decoded, error) {
	var env struct {
		DestinationTopic string            `json:"destination_topic"`
		UUID             string            `json:"uuid"`
		Payload          []byte            `json:"payload"`
		Metadata         map[string]string `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&env); err != nil {
		return decoded{}, fmt.Errorf("not a watermill envelope: %w", err)
	}
	if env.DestinationTopic == "" {
		return decoded{}, fmt.Errorf("not a watermill envelope: no destination_topic")
	}
	h := map[string]string{watermillUUIDHeader: env.UUID}
	for k, v := range env.Metadata {
		h[k] = v
	}
	return decoded{value: env.Payload, headers: h, topic: env.DestinationTopic}, nil
}

// valueHash digests a value (nil and empty alike, as sameValue compares
// them): 128 bits, two hashes seeded in this process, so that a payload
// is compared with its records' values without being kept (readBroker).
func valueHash(b []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(valueSeeds[0], b), maphash.Bytes(valueSeeds[1], b)}
}

var valueSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// sameValue compares a record's value with the decoded one: equal bytes,
// or equal JSON documents (a relay may re-encode the JSON it read).
func sameValue(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ja, okA := canonicalJSON(a)
	jb, okB := canonicalJSON(b)
	return okA && okB && bytes.Equal(ja, jb)
}

// canonicalJSON re-encodes one JSON document with sorted keys, numbers
// kept as written (a float64 would make 2^53+1 equal to 2^53).
func canonicalJSON(b []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

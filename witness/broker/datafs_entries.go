package broker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
)

const entryHeader = 10

// checkEntryLog checks the framing of an append log to its last byte
// (kfake would drop a damaged tail with only a warning) and, for
// groups.log (replay not nil), that each entry is a group entry kfake
// knows; replay is given each checked group entry in order.
func checkEntryLog(name string, raw []byte, replay func(diskGroupEntry)) error {
	groups := replay != nil
	names := map[string]bool{}
	n := 0
	for pos := 0; pos < len(raw); n++ {
		if n >= MaxLogEntries {
			return limited(name, "more than %d entries", MaxLogEntries)
		}
		if len(raw)-pos < entryHeader {
			return damaged(name, "%d bytes at %d are too few for an entry", len(raw)-pos, pos)
		}
		length := int64(binary.LittleEndian.Uint32(raw[pos:]))
		if length < 2 || length > int64(len(raw)-pos-8) {
			return damaged(name, "entry at %d declares %d bytes; %d follow", pos, length, len(raw)-pos-8)
		}
		body := raw[pos+8 : pos+8+int(length)]
		if crc32.Checksum(body, crc32c) != binary.LittleEndian.Uint32(raw[pos+4:]) {
			return damaged(name, "entry at %d fails its CRC", pos)
		}
		if v := binary.LittleEndian.Uint16(body); v != 1 {
			return damaged(name, "entry at %d has version %d, want 1", pos, v)
		}
		if groups {
			var e diskGroupEntry
			if err := decodeStrict(name, body[2:], &e); err != nil {
				return fmt.Errorf("entry at %d: %w", pos, err)
			}
			if err := checkGroupEntry(e); err != nil {
				return damaged(name, "entry at %d: %v", pos, err)
			}
			if !names[e.Group] && len(names) >= MaxGroups {
				return limited(name, "more than %d groups", MaxGroups)
			}
			names[e.Group] = true
			replay(e)
		} else if !json.Valid(body[2:]) {
			return damaged(name, "entry at %d is not JSON", pos)
		}
		pos += 8 + int(length)
	}
	return nil
}

func checkGroupEntry(e diskGroupEntry) error {
	if e.Group == "" || len(e.Group) > maxGroupName {
		return fmt.Errorf("group name of %d bytes", len(e.Group))
	}
	switch e.Type {
	case "commit", "delete":
		if err := checkTopicName(e.Topic); err != nil {
			return err
		}
		if e.Part < 0 || e.Part >= MaxPartitions {
			return fmt.Errorf("partition %d", e.Part)
		}
	case "meta":
		if e.GroupType != "" && e.GroupType != "classic" {
			return fmt.Errorf("group type %q", e.GroupType)
		}
	case "meta848", "static":
	default:
		return fmt.Errorf("unknown entry type %q", e.Type)
	}
	return nil
}

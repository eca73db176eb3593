package broker

import (
	"time"
)

// Mirrors of kfake's persisted types (persist.go, currentPersistVersion
// 1), decoded strictly. The copy kfake loads gets these re-encoded, so it
// sees no field that was not checked.
type (
	diskMeta struct {
		Version   int    `json:"version"`
		ClusterID string `json:"cluster_id"`
	}
	diskTopics struct {
		Version int         `json:"version"`
		Topics  []diskTopic `json:"topics"`
	}
	diskTopic struct {
		Name       string `json:"name"`
		ID         string `json:"id"`
		Partitions int    `json:"partitions"`
		Replicas   int    `json:"replicas"`
		// Configs are checked for size but not given to kfake: topic
		// configs steer retention and compaction, which must not run
		// on the evidence while it is read.
		Configs map[string]string `json:"configs,omitempty"`
	}
	diskSnapshot struct {
		Version          int              `json:"version"`
		HighWatermark    int64            `json:"high_watermark"`
		LastStableOffset int64            `json:"last_stable_offset"`
		LogStartOffset   int64            `json:"log_start_offset"`
		Epoch            int32            `json:"epoch"`
		LeaderNode       int32            `json:"leader_node,omitempty"`
		MaxTimestamp     int64            `json:"max_timestamp"`
		CreatedAt        time.Time        `json:"created_at"`
		AbortedTxns      []diskAbortedTxn `json:"aborted_txns,omitempty"`
		Segments         []diskSegment    `json:"segments"`
	}
	diskAbortedTxn struct {
		ProducerID  int64 `json:"producer_id"`
		FirstOffset int64 `json:"first_offset"`
		LastOffset  int64 `json:"last_offset"`
	}
	diskSegment struct {
		BaseOffset int64 `json:"base_offset"`
		Size       int64 `json:"size"`
		MinEpoch   int32 `json:"min_epoch,omitempty"`
		MaxEpoch   int32 `json:"max_epoch,omitempty"`
	}
	diskGroupEntry struct {
		Type       string  `json:"type"`
		Group      string  `json:"g"`
		Topic      string  `json:"t,omitempty"`
		Part       int32   `json:"p,omitempty"`
		Offset     int64   `json:"o,omitempty"`
		Epoch      int32   `json:"e,omitempty"`
		Metadata   *string `json:"m,omitempty"`
		LastCommit *int64  `json:"lc,omitempty"`
		GroupType  string  `json:"typ,omitempty"`
		ProtoType  string  `json:"pt,omitempty"`
		Protocol   string  `json:"pr,omitempty"`
		Generation int32   `json:"gen,omitempty"`
		Assignor   string  `json:"assignor,omitempty"`
		GroupEpoch int32   `json:"epoch848,omitempty"`
		InstanceID string  `json:"instance,omitempty"`
		MemberID   string  `json:"member,omitempty"`
	}
)

package evidence

// Witness is what the systems themselves recorded of the run, beside the
// actors' logs: the database's binary log and the broker's own log. The
// verifier derives the history from these files and holds every actor's
// event against it; evidence without them is at best inconclusive.
type Witness struct {
	// Database is the run's binary log; nil when it could not be had
	// (Missing says why).
	Database *DatabaseWitness `json:"database,omitempty"`
	// Broker is the broker's record of the run; nil when it could not be
	// had (Missing says why).
	Broker *BrokerWitness `json:"broker,omitempty"`
	// Missing names each witness that could not be had, and why.
	Missing []string `json:"missing"`
}

// Witness sources.
const (
	// WitnessBinlogFiles: the binlog files of a private server, copied
	// verbatim after FLUSH BINARY LOGS.
	WitnessBinlogFiles = "binlog-files"
	// WitnessBinlogStream: the binlog of an external server fetched over
	// the replication protocol and written as binlog files.
	WitnessBinlogStream = "binlog-stream"
	// WitnessKfakeDataDir: the embedded broker's data directory.
	WitnessKfakeDataDir = "kfake-data-dir"
	// WitnessKafkaDump: the run's topics and group offsets read from an
	// external broker through the Kafka protocol (witness/broker dump).
	WitnessKafkaDump = "kafka-dump"
)

// DatabaseWitness covers the run's transactions on the database server.
type DatabaseWitness struct {
	Source        string `json:"source"`
	ServerVersion string `json:"server_version"`
	ServerID      uint32 `json:"server_id"`
	// StartFile and StartPos locate the server's binlog before the first
	// scenario; GTIDStart and GTIDEnd are @@gtid_binlog_pos before the
	// first and after the last scenario.
	StartFile string        `json:"start_file"`
	StartPos  uint32        `json:"start_pos"`
	GTIDStart string        `json:"gtid_start"`
	GTIDEnd   string        `json:"gtid_end"`
	Files     []WitnessFile `json:"files"`
}

// BrokerWitness covers the run's topics and consumer-group offsets.
type BrokerWitness struct {
	Source         string        `json:"source"`
	Implementation string        `json:"implementation"`
	Files          []WitnessFile `json:"files"`
}

// WitnessFile is one file of a witness, its path relative to the evidence
// file, its size and its sha256.
type WitnessFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

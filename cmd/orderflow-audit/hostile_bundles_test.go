package main

import (
	ebin "encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The log, scenario and witness files most cases aim at.
const (
	hScenario = "normalChain"
	hActor    = "consumer-1"
	hLog      = "u80/normalChain/consumer-1.jsonl"
	hBinlog   = "u80/witness/db/binlog.000001"
	hKafka    = "u80/witness/kafka"
)

// hostileCase is one class of hostile bundle or hostile output path.
type hostileCase struct {
	name string
	// names: the message must name the offending file: any one of these
	// (its bundle-relative path, its base name, or where the evidence
	// names it) in verify's or report's output.
	names []string
	root  bool // needs root (mknod)
	// setup plants the hostile bundle (w.edit for the evidence, w.then
	// for u80.json itself); seal then fixes up every digest.
	setup func(t *testing.T, w *hostileWorld)
	// out, for an output-path case, makes the -o target (the bundle stays
	// pristine) and returns it; only `report -o target` runs.
	out func(t *testing.T, w *hostileWorld) string
	// text: verify's text output must carry no raw control character
	// (ESC) nor bidi override, and verify --json must be valid JSON.
	text bool
}

// TestHostileBundles is the acceptance suite of issue #20: hostile
// bundles built from the committed example (digests, sizes, line counts
// and binlog CRC32s fixed up, so that the parsers face the bytes) and
// hostile `report -o` paths. For every case `verify` and `report` (or
// `report -o`) run as processes of the built binary, each of which must
// exit 1, 2 or 4 (never 0, never a panic) with a message naming the
// offending file, within 60 s and under 1 GiB of resident memory, and
// change nothing outside the bundle and the named output: a sentinel
// ~/.bashrc (HOME is the case's own), foreign files, /etc/passwd,
// /dev/null and /dev/zero, and no ofa-kfake-read-* left in TMPDIR. The
// embedded broker must survive malformed frames and serve the next
// client. Cases run two at a time; a case whose verify hangs skips its
// report. Give it -timeout 30m: a regression costs 60 s a case.
func TestHostileBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 2 GiB sparse files and runs each case up to 60 s")
	}
	binary(t)
	pristine := hostilePristine(t)
	t.Cleanup(func() {
		os.RemoveAll(pristine)
		hostilePristineOnce = sync.Once{} // -count=2 copies it again
	})

	// The fixture itself: the pristine copy, resealed through the harness
	// with nothing changed, must PASS (exit 0); every case below is then
	// refused for what it planted, not for a broken fixture.
	t.Run("fixture", func(t *testing.T) {
		w := newHostileWorld(t)
		w.craftBinlog(func(b []byte, evs []hostileBinlogEvent) {
			for _, e := range evs {
				hostileFixCRC(b, e.off, e.size)
			}
		})
		w.seal()
		if r := w.run("verify", w.ev); r.code != 0 {
			t.Fatalf("the resealed pristine bundle does not pass: %s\n%s%s", r, hostileTail(r.stdout, 3000), r.stderr)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	sem := make(chan struct{}, 2)
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root (mknod)")
			}
			runHostileCase(t, tc)
		})
	}
	for _, f := range hostileFrames {
		t.Run("broker/"+f.name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			hostileBrokerFrame(t, f.b)
		})
	}
}

func runHostileCase(t *testing.T, tc hostileCase) {
	w := newHostileWorld(t)
	var runs [][]string
	skip := []string{w.tmp, w.bundle}
	if tc.out != nil {
		target := tc.out(t, w)
		runs = [][]string{{"report", "-o", target, w.ev}}
		skip = []string{w.tmp} // the bundle must not change either
	} else {
		tc.setup(t, w)
		w.seal()
		runs = [][]string{{"verify", w.ev}, {"report", w.ev}}
		if tc.text {
			runs = append(runs, []string{"verify", "--json", w.ev})
		}
	}
	before := hostileSnapshot(w.root, skip...)
	for i, args := range runs {
		r := w.run(args...)
		t.Log(r)
		checkHostileResult(t, tc, r)
		if i == 0 && r.killed == "timeout" && len(runs) > 1 {
			t.Logf("%s and the rest skipped: %s already hung", strings.Join(runs[1][:1], " "), args[0])
			break
		}
	}
	for _, c := range hostileChanged(before, hostileSnapshot(w.root, skip...)) {
		t.Errorf("outside the bundle and the named output: %s", c)
	}
	if left := hostileLeftovers(w.tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

// panicMarks are what a Go crash prints: a panic, a fatal runtime error
// (out of memory), a goroutine dump.
var panicMarks = []string{"panic:", "goroutine ", "fatal error:"}

func checkHostileResult(t *testing.T, tc hostileCase, r hostileResult) {
	t.Helper()
	out := r.stdout + r.stderr
	if r.killed != "" {
		t.Errorf("%s: killed (%s) after %v, max RSS %d MiB; stderr: %s", r.args[0], r.killed,
			r.elapsed.Round(1e6), r.maxRSS>>20, hostileTail(r.stderr, 1500))
		return
	}
	if !slices.Contains([]int{1, 2, 4}, r.code) {
		t.Errorf("%s: exit %d; want 1, 2 or 4; stderr: %s", r.show, r.code, hostileTail(r.stderr, 1500))
	}
	for _, m := range panicMarks {
		if strings.Contains(r.stderr, m) {
			t.Errorf("%s: the process crashed (%q): %s", r.args[0], m, hostileTail(r.stderr, 2500))
			break
		}
	}
	if r.maxRSS >= hostileMaxRSS {
		t.Errorf("%s: max RSS %d MiB; want < 1 GiB", r.args[0], r.maxRSS>>20)
	}
	if !slices.ContainsFunc(tc.names, func(n string) bool { return n != "" && strings.Contains(out, n) }) {
		t.Errorf("%s: the output names none of %q:\nstdout %s\nstderr %s", r.show, tc.names,
			hostileHead(r.stdout, 1500), hostileTail(r.stderr, 1500))
	}
	if tc.text && r.args[0] == "verify" {
		if slices.Contains(r.args, "--json") {
			if !json.Valid([]byte(r.stdout)) {
				t.Errorf("verify --json: stdout is not valid JSON: %s", hostileTail(r.stdout, 1500))
			}
		}
		bads := []string{"\x1b", "\u202e"}
		if slices.Contains(r.args, "--json") {
			bads = bads[:1] // JSON stays exact: a bidi override is a valid character of a JSON string
		}
		for _, bad := range bads {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the output carries a raw %q from the bundle: %q", r.show, bad,
					hostileTail(out[:strings.Index(out, bad)+min(len(out)-strings.Index(out, bad), 80)], 300))
			}
		}
	}
}

// hostileCases is the table: more than 45 classes.
func hostileCases() []hostileCase {
	var cases []hostileCase
	add := func(c ...hostileCase) { cases = append(cases, c...) }

	// Event-log and witness path tricks: the evidence names a path that
	// is not the canonical bundle-relative path of its file.
	logPath := func(name, p string, names ...string) hostileCase {
		return hostileCase{name: "log-path/" + name, names: append(names, p, hostilePointer(hScenario, hActor, "")),
			setup: func(t *testing.T, w *hostileWorld) {
				w.edit(func(ev *evidence.Evidence) { hostileLogRef(t, ev, hScenario, hActor).Path = p })
			}}
	}
	add(
		logPath("dotdot", "u80/normalChain/../../../home/.bashrc", ".bashrc"),
		logPath("absolute", "/etc/passwd", "passwd"),
		logPath("backslash", `u80\normalChain\consumer-1.jsonl`, "consumer-1.jsonl"),
		logPath("nul", "u80/normalChain/consumer-1.jsonl\x00.txt", "consumer-1.jsonl"),
		logPath("empty", "", "consumer-1"),
		logPath("dot-slash", "./"+hLog, "consumer-1.jsonl"),
		logPath("double-slash", "u80//normalChain/consumer-1.jsonl", "consumer-1.jsonl"),
	)
	dbPath := func(name, p string, names ...string) hostileCase {
		return hostileCase{name: "witness-path/db-" + name, names: append(names, p, "/witness/database/files/0/path"),
			setup: func(t *testing.T, w *hostileWorld) {
				w.edit(func(ev *evidence.Evidence) { ev.Witness.Database.Files[0].Path = p })
			}}
	}
	add(
		dbPath("dotdot", "u80/witness/db/../../../../home/.bashrc", ".bashrc"),
		dbPath("absolute", "/etc/passwd", "passwd"),
		dbPath("backslash", `u80\witness\db\binlog.000001`, "binlog.000001"),
		dbPath("nul", "u80/witness/db/binlog.000001\x00", "binlog.000001"),
		dbPath("empty", "", "binlog"),
		dbPath("dot-slash", "./"+hBinlog, "binlog.000001"),
		dbPath("double-slash", "u80/witness//db/binlog.000001", "binlog.000001"),
	)
	kafkaPath := func(name, p string, names ...string) hostileCase {
		return hostileCase{name: "witness-path/kafka-" + name, names: append(names, p, hostilePointer("", "", "/meta.json")),
			setup: func(t *testing.T, w *hostileWorld) {
				w.edit(func(ev *evidence.Evidence) {
					for i, f := range ev.Witness.Broker.Files {
						if strings.HasSuffix(f.Path, "/meta.json") {
							ev.Witness.Broker.Files[i].Path = p
						}
					}
				})
			}}
	}
	add(
		kafkaPath("dotdot", "u80/witness/kafka/../../../home/.bashrc", ".bashrc"),
		kafkaPath("absolute", "/etc/passwd", "passwd"),
		kafkaPath("double-slash", "u80/witness/kafka//meta.json", "meta.json"),
	)

	// Symlinks.
	add(
		hostileCase{name: "symlink/log-relative-inside", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Rename(w.b(hLog), w.b("u80/normalChain/consumer-1.real")))
				w.must(os.Symlink("consumer-1.real", w.b(hLog)))
			}},
		hostileCase{name: "symlink/log-relative-escaping", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Symlink("../../../home/.bashrc", w.replace(hLog)))
			}},
		hostileCase{name: "symlink/log-absolute-etc-passwd", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Symlink("/etc/passwd", w.replace(hLog))) }},
		hostileCase{name: "symlink/log-dev-zero", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Symlink("/dev/zero", w.replace(hLog))) }},
		hostileCase{name: "symlink/log-directory-in-the-middle", names: []string{"normalChain/", "consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) {
				// u80/normalChain is a link to a copy outside the bundle.
				w.must(os.Rename(w.b("u80/normalChain"), filepath.Join(w.outside, "normalChain")))
				w.must(os.Symlink("../../outside/normalChain", w.b("u80/normalChain")))
			}},
		hostileCase{name: "symlink/binlog-relative-inside", names: []string{"binlog.000001"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Rename(w.b(hBinlog), w.b("u80/binlog.real")))
				w.must(os.Symlink("../../binlog.real", w.b(hBinlog)))
			}},
		hostileCase{name: "symlink/binlog-absolute-etc-passwd", names: []string{"binlog.000001"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Symlink("/etc/passwd", w.replace(hBinlog))) }},
		hostileCase{name: "symlink/binlog-dev-zero", names: []string{"binlog.000001"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Symlink("/dev/zero", w.replace(hBinlog))) }},
		// The defect of issue #20: a relative link that stays inside the
		// bundle where it lies (to u80/home/.bashrc, a copy of the
		// segment) but, from the verifier's copy in TMPDIR, reaches
		// $HOME/.bashrc, which the broker library then "repairs".
		hostileCase{name: "symlink/kafka-segment-to-home-bashrc-via-copy", names: []string{"0.dat", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				seg := w.partDir() + "/0.dat"
				b, err := os.ReadFile(w.b(seg))
				w.must(err)
				w.write(w.b("u80/home/.bashrc"), string(b))
				w.must(os.Symlink("../../../../home/.bashrc", w.replace(seg)))
			}},
		hostileCase{name: "symlink/kafka-segment-relative-escaping", names: []string{"0.dat", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Symlink("../../../../../../home/.bashrc", w.replace(w.partDir()+"/0.dat")))
			}},
		hostileCase{name: "symlink/kafka-segment-absolute-to-sentinel", names: []string{"0.dat", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Symlink(filepath.Join(w.home, ".bashrc"), w.replace(w.partDir()+"/0.dat")))
			}},
		hostileCase{name: "symlink/kafka-snapshot-dev-zero", names: []string{"snapshot.json", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Symlink("/dev/zero", w.replace(w.partDir()+"/snapshot.json")))
			}},
		hostileCase{name: "symlink/kafka-partition-directory-in-the-middle", names: []string{"normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				part := w.partDir()
				w.must(os.Rename(w.b(part), filepath.Join(w.outside, "part")))
				w.must(os.Symlink("../../../../../outside/part", w.b(part)))
			}},
	)

	// Special files where a regular file is expected.
	fifo := func(name string, rel func(w *hostileWorld) string, names ...string) hostileCase {
		return hostileCase{name: "special/fifo-" + name, names: names, setup: func(t *testing.T, w *hostileWorld) {
			w.must(syscall.Mkfifo(w.replace(rel(w)), 0o644))
		}}
	}
	add(
		hostileCase{name: "special/fifo-evidence-file", names: []string{"u80.json"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.then(func() { w.must(os.Remove(w.ev)); w.must(syscall.Mkfifo(w.ev, 0o644)) })
			}},
		fifo("event-log", func(*hostileWorld) string { return hLog }, "consumer-1.jsonl"),
		fifo("binlog", func(*hostileWorld) string { return hBinlog }, "binlog.000001"),
		fifo("kafka-snapshot", func(w *hostileWorld) string { return w.partDir() + "/snapshot.json" }, "snapshot.json", "normalChain-0"),
		hostileCase{name: "special/directory-as-event-log", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Mkdir(w.replace(hLog), 0o755)) }},
		hostileCase{name: "special/directory-as-binlog", names: []string{"binlog.000001"},
			setup: func(t *testing.T, w *hostileWorld) { w.must(os.Mkdir(w.replace(hBinlog), 0o755)) }},
		hostileCase{name: "special/chardev-zero-as-event-log", names: []string{"consumer-1.jsonl"}, root: true,
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(syscall.Mknod(w.replace(hLog), syscall.S_IFCHR|0o644, 1<<8|5))
			}},
		hostileCase{name: "special/chardev-zero-as-binlog", names: []string{"binlog.000001"}, root: true,
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(syscall.Mknod(w.replace(hBinlog), syscall.S_IFCHR|0o644, 1<<8|5))
			}},
		hostileCase{name: "special/socket-as-event-log", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) { w.socket(w.replace(hLog)) }},
	)

	// Hard links.
	add(
		hostileCase{name: "hardlink/event-log-with-a-second-link-outside", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.must(os.Link(w.b(hLog), filepath.Join(w.outside, "consumer-1.jsonl")))
			}},
		// 124 names of one 1 GiB sparse log, spread over the scenarios
		// (the schema allows 64 logs a scenario): hashing each name
		// anew reads 124 GiB.
		hostileCase{name: "hardlink/124-links-to-one-sparse-log", names: []string{"bomb-"},
			setup: func(t *testing.T, w *hostileWorld) {
				var first string
				for i := range 124 {
					sc := &w.doc.Scenarios[i%len(w.doc.Scenarios)]
					rel := fmt.Sprintf("u80/%s/bomb-%d.jsonl", sc.ID, i)
					if i == 0 {
						first = w.b(rel)
						w.sparse(first, 1<<30)
					} else {
						w.must(os.Link(first, w.b(rel)))
					}
					sc.Logs = append(sc.Logs, evidence.LogRef{Path: rel, Actor: fmt.Sprintf("bomb-%d", i)})
				}
			}},
	)

	// Size bombs, listed with their real digests.
	add(
		hostileCase{name: "size/sparse-2g-witness-file", names: []string{"binlog.000002"},
			setup: func(t *testing.T, w *hostileWorld) { w.sparse(w.b("u80/witness/db/binlog.000002"), 2<<30) }},
		hostileCase{name: "size/sparse-2g-kafka-segment", names: []string{"1.dat", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) { w.sparse(w.b(w.partDir()+"/1.dat"), 2<<30) }},
		hostileCase{name: "size/sparse-2g-event-log", names: []string{"consumer-1.jsonl"},
			setup: func(t *testing.T, w *hostileWorld) { w.sparse(w.replace(hLog), 2<<30) }},
		hostileCase{name: "size/sparse-3g-evidence-file", names: []string{"u80.json"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.then(func() { w.must(os.Truncate(w.ev, 3<<30)) })
			}},
	)

	// Crafted binlog events, CRC32 fixed up.
	binlogCase := func(name string, f func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent)) hostileCase {
		return hostileCase{name: "binlog/" + name, names: []string{"binlog.000001"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.craftBinlog(func(b []byte, evs []hostileBinlogEvent) { f(t, w, b, evs) })
			}}
	}
	add(
		binlogCase("table-map-column-count", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogTableMap, int(w.doc.Witness.Database.StartPos))
			b[hostileTableMapColumns(b, e)] = 250 // more columns than the event holds types for
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("query-status-vars-length", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogQuery, int(w.doc.Witness.Database.StartPos))
			// post-header: thread id 4, exec time 4, db length 1, error 2, status-vars length 2
			ebin.LittleEndian.PutUint16(b[e.off+binlogHeader+11:], 0xffff)
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("rows-column-count", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogWriteRows, int(w.doc.Witness.Database.StartPos))
			// post-header: table id 6, flags 2; then the column count
			b[e.off+binlogHeader+8] = 250
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("table-map-column-count-2-pow-30", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogTableMap, int(w.doc.Witness.Database.StartPos))
			// a length-encoded 8-byte count (0xfe): 2^30 columns
			p := hostileTableMapColumns(b, e)
			if p+9 > e.off+e.size-4 {
				t.Fatal("the TABLE_MAP event is too short for a 9-byte column count")
			}
			b[p] = 0xfe
			ebin.LittleEndian.PutUint64(b[p+1:], 1<<30)
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("rows-column-count-2-pow-30", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogWriteRows, int(w.doc.Witness.Database.StartPos))
			p := e.off + binlogHeader + 8
			if p+9 > e.off+e.size-4 {
				t.Fatal("the rows event is too short for a 9-byte column count")
			}
			b[p] = 0xfe
			ebin.LittleEndian.PutUint64(b[p+1:], 1<<30)
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("event-length-beyond-file", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogTableMap, int(w.doc.Witness.Database.StartPos))
			ebin.LittleEndian.PutUint32(b[e.off+9:], uint32(len(b)-e.off+4096))
			hostileFixCRC(b, e.off, e.size)
		}),
		binlogCase("event-length-ffffffff", func(t *testing.T, w *hostileWorld, b []byte, evs []hostileBinlogEvent) {
			e := hostileBinlogFirst(t, evs, binlogTableMap, int(w.doc.Witness.Database.StartPos))
			ebin.LittleEndian.PutUint32(b[e.off+9:], 0xffffffff)
			hostileFixCRC(b, e.off, e.size)
		}),
	)

	// Crafted broker data.
	add(
		hostileCase{name: "kafka/topics-50-million-partitions", names: []string{"topics.json"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.editTopics(func(topic map[string]any) { topic["partitions"] = 50_000_000 })
			}},
		hostileCase{name: "kafka/topic-named-dotdot-evil", names: []string{"topics.json", "evil"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.editTopics(func(topic map[string]any) { topic["name"] = "../../../../evil" })
				// partitions/../../../../evil-0 from the bundle's witness
				// directory is bundle/evil-0: its snapshot and segment
				// lead to /dev/zero.
				w.must(os.MkdirAll(filepath.Join(w.bundle, "evil-0"), 0o755))
				w.must(os.Symlink("/dev/zero", filepath.Join(w.bundle, "evil-0", "snapshot.json")))
				w.must(os.Symlink("/dev/zero", filepath.Join(w.bundle, "evil-0", "0.dat")))
			}},
		hostileCase{name: "kafka/topic-named-dotdot-snapshot-fifo", names: []string{"topics.json", "evil"},
			setup: func(t *testing.T, w *hostileWorld) {
				w.editTopics(func(topic map[string]any) { topic["name"] = "../../../../evil" })
				// As above, the partition outside the witness directory
				// (so never digested): its snapshot is a FIFO.
				w.must(os.MkdirAll(filepath.Join(w.bundle, "evil-0"), 0o755))
				w.must(syscall.Mkfifo(filepath.Join(w.bundle, "evil-0", "snapshot.json"), 0o644))
			}},
		hostileCase{name: "kafka/snapshot-huge-json", names: []string{"snapshot.json", "normalChain-0"},
			setup: func(t *testing.T, w *hostileWorld) {
				f, err := os.Create(w.b(w.partDir() + "/snapshot.json"))
				w.must(err)
				seg := strings.Repeat(`{"base_offset":0,"size":198},`, 1<<15)
				f.WriteString(`{"version":1,"high_watermark":1,"last_stable_offset":1,"log_start_offset":0,"epoch":0,"max_timestamp":1796140651718,"created_at":"2026-12-01T15:57:31.701845549Z","segments":[`)
				for range 200 { // ~190 MB
					f.WriteString(seg)
				}
				f.WriteString(`{"base_offset":0,"size":198}]}`)
				w.must(f.Close())
			}},
		hostileCase{name: "kafka/segment-truncated", names: []string{"0.dat", "concurrentRelays"},
			setup: func(t *testing.T, w *hostileWorld) {
				seg := w.b(w.partDirOf("concurrentRelays") + "/0.dat")
				st, err := os.Stat(seg)
				w.must(err)
				w.must(os.Truncate(seg, st.Size()*2/3))
			}},
		hostileCase{name: "kafka/segment-junk", names: []string{"0.dat", "concurrentRelays"},
			setup: func(t *testing.T, w *hostileWorld) {
				seg := w.b(w.partDirOf("concurrentRelays") + "/0.dat")
				st, err := os.Stat(seg)
				w.must(err)
				junk := make([]byte, st.Size())
				r := rand.New(rand.NewPCG(20, 20))
				for i := range junk {
					junk[i] = byte(r.Uint32())
				}
				w.must(os.WriteFile(seg, junk, 0o644))
			}},
	)

	// Terminal injection: strings of the bundle reach the reasons.
	const fakePass = "\x1b[2J\x1b[H\x1b[32mverify:\u00a0PASS\x1b[0m" // no ASCII space: the schema refuses one in a metric
	add(
		hostileCase{name: "terminal/escape-in-metric", names: []string{"u80.json"}, text: true,
			setup: func(t *testing.T, w *hostileWorld) {
				w.edit(func(ev *evidence.Evidence) { hostileScenario(t, ev, hScenario).Metrics[0].Value = fakePass })
			}},
		hostileCase{name: "terminal/bidi-override-in-metric", names: []string{"u80.json"}, text: true,
			setup: func(t *testing.T, w *hostileWorld) {
				w.edit(func(ev *evidence.Evidence) { hostileScenario(t, ev, hScenario).Metrics[0].Value = "\u202e102" })
			}},
		hostileCase{name: "terminal/escape-in-event-log", names: []string{"consumer-1.jsonl"}, text: true,
			setup: func(t *testing.T, w *hostileWorld) {
				b, err := os.ReadFile(w.b(hLog))
				w.must(err)
				s := strings.Replace(string(b), `"event_id":"e-1"`, `"event_id":"e-1\u001b[2J\u001b[H\u001b[32mverify: PASS\u001b[0m\u202e"`, 1)
				if s == string(b) {
					t.Fatal("the example's consumer log has no event e-1")
				}
				w.write(w.b(hLog), s)
			}},
	)

	// report -o hostile paths, on the pristine bundle.
	add(
		hostileCase{name: "report-o/char-device-as-root", names: []string{"null"}, root: true,
			out: func(t *testing.T, w *hostileWorld) string {
				// A null device of our own: replacing the machine's
				// /dev/null would break every other process on it (see
				// report-o/real-dev-null).
				p := filepath.Join(w.outside, "null")
				w.must(syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3))
				return p
			}},
		hostileCase{name: "report-o/fifo", names: []string{"report.md"},
			out: func(t *testing.T, w *hostileWorld) string {
				p := filepath.Join(w.outside, "report.md")
				w.must(syscall.Mkfifo(p, 0o644))
				return p
			}},
		hostileCase{name: "report-o/symlink-to-sentinel", names: []string{"report.md"},
			out: func(t *testing.T, w *hostileWorld) string {
				p := filepath.Join(w.outside, "report.md")
				w.must(os.Symlink("../home/.bashrc", p))
				return p
			}},
		hostileCase{name: "report-o/directory", names: []string{"reports"},
			out: func(t *testing.T, w *hostileWorld) string {
				p := filepath.Join(w.outside, "reports")
				w.must(os.Mkdir(p, 0o755))
				return p
			}},
		hostileCase{name: "report-o/the-bundles-evidence-file", names: []string{"u80.json"},
			out: func(t *testing.T, w *hostileWorld) string { return w.ev }},
		hostileCase{name: "report-o/one-of-the-bundles-event-logs", names: []string{"consumer-1.jsonl"},
			out: func(t *testing.T, w *hostileWorld) string { return w.b(hLog) }},
		hostileCase{name: "report-o/existing-foreign-file", names: []string{"foreign.md"},
			out: func(t *testing.T, w *hostileWorld) string { return filepath.Join(w.outside, "foreign.md") }},
	)
	if os.Getenv("OFA_HOSTILE_REAL_DEV_NULL") == "1" {
		// Opt-in (a throwaway machine only): the machine's own /dev/null.
		add(hostileCase{name: "report-o/real-dev-null", names: []string{"/dev/null"}, root: true,
			out: func(t *testing.T, w *hostileWorld) string { return "/dev/null" }})
	}
	return cases
}

// hostilePointer is the JSON pointer of a path in the pristine evidence
// (where a schema error names it): the log of actor in scenario, or the
// broker witness file whose path ends in suffix.
func hostilePointer(scenario, actor, suffix string) string {
	var ev evidence.Evidence
	if err := json.Unmarshal(hostilePristineRaw, &ev); err != nil {
		return "(pristine evidence: " + err.Error() + ")"
	}
	for i, sc := range ev.Scenarios {
		for j, l := range sc.Logs {
			if sc.ID == scenario && l.Actor == actor {
				return fmt.Sprintf("/scenarios/%d/logs/%d/path", i, j)
			}
		}
	}
	if ev.Witness != nil && ev.Witness.Broker != nil {
		for i, f := range ev.Witness.Broker.Files {
			if suffix != "" && strings.HasSuffix(f.Path, suffix) {
				return fmt.Sprintf("/witness/broker/files/%d/path", i)
			}
		}
	}
	return "(no such path in the pristine evidence)"
}

// partDir is the bundle-relative partition directory of the normalChain
// topic; partDirOf that of another scenario's (partition 0).
func (w *hostileWorld) partDir() string { return w.partDirOf(hScenario) }

func (w *hostileWorld) partDirOf(scenario string) string {
	w.t.Helper()
	sc := hostileScenario(w.t, w.doc, scenario)
	if len(sc.Topics) == 0 {
		w.t.Fatalf("the example's %s has no topic", scenario)
	}
	return hKafka + "/partitions/" + sc.Topics[0] + "-0"
}

func (w *hostileWorld) scenarioIndex(id string) int {
	w.t.Helper()
	for i := range w.doc.Scenarios {
		if w.doc.Scenarios[i].ID == id {
			return i
		}
	}
	w.t.Fatalf("no scenario %s", id)
	return -1
}

// editTopics rewrites the broker's topics.json, changing the normalChain
// topic with f.
func (w *hostileWorld) editTopics(f func(topic map[string]any)) {
	w.t.Helper()
	p := w.b(hKafka + "/topics.json")
	b, err := os.ReadFile(p)
	w.must(err)
	var doc map[string]any
	w.must(json.Unmarshal(b, &doc))
	want := hostileScenario(w.t, w.doc, hScenario).Topics[0]
	found := false
	for _, tp := range doc["topics"].([]any) {
		if m := tp.(map[string]any); m["name"] == want {
			f(m)
			found = true
		}
	}
	if !found {
		w.t.Fatalf("topics.json has no topic %s", want)
	}
	out, err := json.Marshal(doc)
	w.must(err)
	w.must(os.WriteFile(p, out, 0o644))
}

// socket leaves a Unix socket at p (bound in a short directory, where the
// path fits sun_path, then moved).
func (w *hostileWorld) socket(p string) {
	w.t.Helper()
	dir, err := os.MkdirTemp("", "hs")
	w.must(err)
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	w.must(err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	w.must(l.Close())
	w.must(os.Rename(filepath.Join(dir, "s"), p))
}

package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDigestWitnessFiles: every regular file under the directory, sorted,
// with its path relative to the evidence file; a symlink is an error.
func TestDigestWitnessFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"meta.json": "{}", "partitions/t-0/0.dat": "abc", "groups.log": ""} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := DigestWitnessFiles(dir, "u80/witness/kafka")
	if err != nil {
		t.Fatal(err)
	}
	want := []WitnessFile{
		{"u80/witness/kafka/groups.log", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"u80/witness/kafka/meta.json", 2, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{"u80/witness/kafka/partitions/t-0/0.dat", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	if len(got) != len(want) {
		t.Fatalf("DigestWitnessFiles = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("file %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	one, err := DigestWitnessFiles(filepath.Join(dir, "meta.json"), "u80/witness/kafka.jsonl")
	if err != nil || len(one) != 1 || one[0].Path != "u80/witness/kafka.jsonl" {
		t.Errorf("one file: %+v, %v", one, err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := DigestWitnessFiles(dir, "w"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("with a symlink: %v; want an error", err)
	}
}

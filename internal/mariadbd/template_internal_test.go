package mariadbd

import (
	"strings"
	"testing"
)

// TestErrorLines: a failure of mariadb-install-db is named by its error
// lines, not by the advice it prints after every failure.
func TestErrorLines(t *testing.T) {
	out := "Installing MariaDB/MySQL system tables in '/d' ...\n" +
		"2026-12-01 16:55:00 0 [ERROR] InnoDB: io_setup() failed with EAGAIN\n" +
		"2026-12-01 16:55:00 0 [ERROR] Aborting\n\n" +
		"Installation of system tables failed!  Examine the logs in\n" +
		"The latest information about mysql_install_db is available at\n" +
		"Please check all of the above before submitting a bug report\n" +
		"at https://mariadb.org/jira\n"
	got := errorLines(out)
	if !strings.HasPrefix(got, "2026-12-01 16:55:00 0 [ERROR] InnoDB: io_setup() failed with EAGAIN | ") ||
		!strings.Contains(got, "[ERROR] Aborting") || !strings.HasSuffix(got, "at https://mariadb.org/jira") {
		t.Errorf("errorLines = %q", got)
	}
	if got := errorLines("a\nb\nc\n"); got != "a | b | c" {
		t.Errorf("without error lines: %q, want the last lines", got)
	}
}

package mariadbd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvBinDir names the directory that holds mariadbd and mariadb-install-db.
// Set, it is the only place searched (so that a test, or a user with two
// installations, chooses exactly which server runs); unset, PATH is
// searched and then the places Debian, Fedora and the MariaDB tarballs use.
const EnvBinDir = "ORDERFLOW_MARIADB_BINDIR"

// ErrNotInstalled: mariadbd or mariadb-install-db is not installed.
var ErrNotInstalled = errors.New("MariaDB server programs not found")

// InstallHint says how to get the programs.
const InstallHint = "install the mariadb-server package (scripts/ensure-mariadb.sh does it with apt-get), " +
	"or run against an external server with --mysql-dsn or ORDERFLOW_MYSQL_DSN"

// Binaries are the two programs a private server needs.
type Binaries struct {
	InstallDB string // mariadb-install-db
	Mariadbd  string // mariadbd
}

// searchDirs are searched, after PATH, when EnvBinDir is unset: PATH often
// lacks the sbin directories for a non-root user.
var searchDirs = []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/libexec", "/usr/local/mysql/bin"}

// FindBinaries finds mariadbd and mariadb-install-db: in dir when it is
// not empty, else in $ORDERFLOW_MARIADB_BINDIR when that is set, else in
// PATH and then the usual places. A missing program is an error wrapping
// ErrNotInstalled that names it, where it was looked for, and InstallHint.
func FindBinaries(dir string) (Binaries, error) {
	where := "PATH and " + strings.Join(searchDirs, ", ")
	dirs := searchDirs
	if dir == "" {
		if env := os.Getenv(EnvBinDir); env != "" {
			dir = env
			where = EnvBinDir + "=" + env
		}
	} else {
		where = dir
	}
	if dir != "" {
		dirs = []string{dir}
	}
	find := func(name string) (string, error) {
		if dir == "" {
			if p, err := exec.LookPath(name); err == nil {
				return p, nil
			}
		}
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", &notInstalled{fmt.Sprintf("%s not found (looked in %s); %s", name, where, InstallHint)}
	}
	var b Binaries
	var err1, err2 error
	b.Mariadbd, err1 = find("mariadbd")
	b.InstallDB, err2 = find("mariadb-install-db")
	if err1 != nil {
		return b, err1
	}
	return b, err2
}

// notInstalled is ErrNotInstalled with a message of its own.
type notInstalled struct{ msg string }

func (e *notInstalled) Error() string { return e.msg }
func (e *notInstalled) Unwrap() error { return ErrNotInstalled }

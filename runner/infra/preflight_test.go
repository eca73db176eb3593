package infra_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// restrictedUser creates an account 'ofa_pf_<random>'@'127.0.0.1' on the
// test server with grants (statements with <u> for the account), dropped
// in t.Cleanup, and connects to the server as it.
func restrictedUser(t *testing.T, grants ...string) *infra.Server {
	t.Helper()
	root := infratest.Server(t)
	user := "ofa_pf_" + infratest.RandomID()
	account := "'" + user + "'@'127.0.0.1'"
	pass := "pw-" + infratest.RandomID()
	exec := func(q string) {
		t.Helper()
		if _, err := root.DB().ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE USER " + account + " IDENTIFIED BY '" + pass + "'")
	t.Cleanup(func() { exec("DROP USER IF EXISTS " + account) })
	for _, g := range grants {
		exec(strings.ReplaceAll(g, "<u>", account))
	}
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, pass
	s, err := infra.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("connect as %s: %v", account, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCheckPrivileges: an account is refused with every privilege the
// scenarios need and it lacks named (ErrPrivileges, also ErrUnavailable:
// exit 3), and passes with exactly infra.ScratchGrant and
// infra.ProcessGrant; the preflight's database is dropped again.
func TestCheckPrivileges(t *testing.T) {
	scratch := strings.ReplaceAll(infra.ScratchGrant, "<account>", "<u>")
	all := infra.Needs{Trigger: true, Process: true}
	for _, tc := range []struct {
		name         string
		grants       []string
		needs        infra.Needs
		want, notNow []string
	}{
		{"nothing granted", nil, all,
			[]string{"CREATE ON `ofa\\_%`.*", "every privilege inside the scratch databases", "PROCESS ON *.*", "3 privilege(s)"}, nil},
		{"no PROCESS", []string{scratch}, all,
			[]string{"1 privilege(s)", "PROCESS ON *.*", "effectDbError and chaos", "INNODB_TRX"}, []string{"CREATE ON `ofa\\_%`.*, for", "TRIGGER, for"}},
		{"databases only", []string{"GRANT CREATE, DROP ON `ofa\\_%`.* TO <u>", "GRANT PROCESS ON *.* TO <u>"}, all,
			[]string{"5 privilege(s)", "INSERT, for", "SELECT, for", "UPDATE, for", "DELETE, for", "TRIGGER, for", "effectDbError (a trigger"},
			[]string{"PROCESS ON *.*, for", "DROP ON `ofa\\_%`.*, for"}},
		{"no DROP", []string{"GRANT CREATE, SELECT, INSERT, UPDATE, DELETE, TRIGGER ON `ofa\\_%`.* TO <u>", "GRANT PROCESS ON *.* TO <u>"}, all,
			[]string{"1 privilege(s)", "DROP ON `ofa\\_%`.*", "is left on the server"}, nil},
		{"what the grants say", []string{scratch, strings.ReplaceAll(infra.ProcessGrant, "<account>", "<u>")}, all, nil, nil},
		{"no PROCESS, none needed", []string{"GRANT CREATE, DROP, SELECT, INSERT, UPDATE, DELETE ON `ofa\\_%`.* TO <u>"}, infra.Needs{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := restrictedUser(t, tc.grants...)
			name := infra.ScratchName("t", infratest.RandomID(), "preflight")
			err := s.CheckPrivileges(t.Context(), name, tc.needs)
			t.Cleanup(func() { infratest.Server(t).DB().Exec("DROP DATABASE IF EXISTS `" + name + "`") })
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckPrivileges = %v; want nil", err)
				}
			} else {
				if !errors.Is(err, infra.ErrPrivileges) || !errors.Is(err, infra.ErrUnavailable) {
					t.Fatalf("CheckPrivileges = %v; want ErrPrivileges and ErrUnavailable", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("CheckPrivileges = %q; want it to name %q", err, w)
					}
				}
				for _, w := range tc.notNow {
					if strings.Contains(err.Error(), w) {
						t.Errorf("CheckPrivileges = %q; names %q, which the account has", err, w)
					}
				}
			}
			var left int
			root := infratest.Server(t)
			if err := root.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if wantLeft := tc.name == "no DROP"; (left == 1) != wantLeft {
				t.Errorf("%s left on the server: %v; want %v", name, left == 1, wantLeft)
			}
		})
	}
}

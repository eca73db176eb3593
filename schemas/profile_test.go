package schemas_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

func TestProfileSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []schemas.Problem // nil: valid
	}{
		{"minimal", `{"name":"n","topic":{"name":"t","event_id":{"header":"id"}},"outbox":{"table":"o","event_id":"id","payload":{"column":"p"},"progress":{"kind":"none"}}}`, nil},
		{"pattern explained", `{"name":"n","topic":{"name":"t","event_id":{"header":"id"}},"outbox":{"table":"o","event_id":"id$.","payload":{"column":"p"},"progress":{"kind":"none"}}}`,
			[]schemas.Problem{{Location: "/outbox/event_id", Message: "want a column, or a column and a JSON path into it (payload$.a.b[0])"}}},
		{"cursor needs against", `{"name":"n","topic":{"name":"t","event_id":{"header":"id"}},"outbox":{"table":"o","event_id":"id","payload":{"column":"p"},"progress":{"kind":"cursor","table":"c","column":"v"}}}`,
			[]schemas.Problem{{Location: "/outbox/progress", Message: "missing properties: 'against'"}}},
		{"external needs brokers", `{"name":"n","broker":{"mode":"external"},"topic":{"name":"t","event_id":{"header":"id"}},"outbox":{"table":"o","event_id":"id","payload":{"column":"p"},"progress":{"kind":"none"}}}`,
			[]schemas.Problem{{Location: "/broker", Message: "missing properties: 'brokers'"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			err := schemas.ValidateProfile(doc)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateProfile = %v; want nil", err)
				}
				return
			}
			var se *schemas.Error
			if !errors.As(err, &se) {
				t.Fatalf("ValidateProfile = %v; want *schemas.Error", err)
			}
			if len(se.Problems) != len(tc.want) {
				t.Fatalf("problems = %v; want %v", se.Problems, tc.want)
			}
			for i := range tc.want {
				if se.Problems[i] != tc.want[i] {
					t.Errorf("problem %d = %v; want %v", i, se.Problems[i], tc.want[i])
				}
			}
		})
	}
	if len(schemas.ProfileSource()) == 0 {
		t.Error("ProfileSource() is empty")
	}
}

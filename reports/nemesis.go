package reports

import (
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// maxNemesisLines bounds the nemesis list of a timeline.
const maxNemesisLines = 400

// addNemesis keeps a fault or heal event of the chaos scenario's nemesis
// for the list under the timeline.
func (tl *Timeline) addNemesis(e evidence.Event) {
	if e.Actor != evidence.ActorNemesis || (e.Kind != evidence.KindFault && e.Kind != evidence.KindHeal) {
		return
	}
	if len(tl.Nemesis) == maxNemesisLines {
		tl.Nemesis = append(tl.Nemesis, "… more, not listed (the nemesis's log has them all)")
	}
	if len(tl.Nemesis) > maxNemesisLines {
		return
	}
	what := "FAULT"
	if e.Kind == evidence.KindHeal {
		what = "heal"
	}
	tl.Nemesis = append(tl.Nemesis, fmt.Sprintf("%s %s %s %s: %s", e.Time.Format("15:04:05.000"), what, e.Point, e.Target, e.Detail))
}

// nemesis writes the nemesis list of a timeline, folded.
func (p *printer) nemesis(tl Timeline) {
	if len(tl.Nemesis) == 0 {
		return
	}
	p.printf("<details><summary>Faults injected and healed by the nemesis: %d %s</summary>\n\n",
		len(tl.Nemesis), plural(int64(len(tl.Nemesis)), "event", "events"))
	for _, l := range tl.Nemesis {
		p.printf("- %s\n", inline(l))
	}
	p.printf("\n</details>\n\n")
}

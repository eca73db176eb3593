package checks

import (
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
)

// businessDerivations are the derivations of this file's scenarios, by id
// (derivations). Orders of several users and several lines
// (spec/placement.go), from the client's records (order_request) and the
// orders committed.
var businessDerivations = map[string]derivation{
	"twoUsersOneKey": {metrics: func(f facts) []metricValue {
		orders, _, _ := f.countOrders()
		ids, own, cross := f.answersByUser()
		return []metricValue{num("orders", orders), num("distinctOrderIds", ids), num("ownReplays", own), num("crossAnswers", cross)}
	}},
	"orderAmounts": {metrics: func(f facts) []metricValue {
		orders, lines, _ := f.countOrders()
		return []metricValue{num("orders", orders), num("lines", lines), f.amountTotal("amountCents"), f.amountsOff("amountsOff")}
	}},
}

// answersByUser reads the client's 2xx answers: how many distinct orders
// they named, how many repeated the order of the same user's first 2xx
// answer with an order that user committed (ownReplays), and how many
// named an order another user committed (crossAnswers).
func (f facts) answersByUser() (ids, own, cross int64) {
	seen := map[int64]bool{}
	first := map[string]int64{}
	for _, r := range f.m.ClientRequests() {
		if r.Status < 200 || r.Status > 299 || r.OrderID == nil {
			continue
		}
		id := *r.OrderID
		if !seen[id] {
			seen[id] = true
			ids++
		}
		var by string
		if o, ok := f.m.Order(id); ok {
			by = o.Principal
		}
		if by != "" && by != r.Principal {
			cross++
		}
		if fid, ok := first[r.Principal]; !ok {
			first[r.Principal] = id
		} else if fid == id && by == r.Principal {
			own++
		}
	}
	return ids, own, cross
}

// amountTotal is the sum of the committed orders' amounts.
func (f facts) amountTotal(name string) metricValue {
	var total int64
	for o := range f.m.Orders() {
		if !o.Row {
			continue
		}
		if o.AmountCents == nil {
			return unknown(name, "order "+strconv.FormatInt(o.ID, 10)+" was committed without its amount on record")
		}
		total += *o.AmountCents
	}
	return num(name, total)
}

// amountsOff counts the committed orders whose amount differs from what
// the lines their client asked for cost at the seeded prices, or from the
// sum of their own lines' quantity times unit price.
func (f facts) amountsOff(name string) metricValue {
	asked := map[int64][]model.ClientRequest{}
	for _, r := range f.m.ClientRequests() {
		if r.OrderID != nil && r.Status >= 200 && r.Status <= 299 {
			asked[*r.OrderID] = append(asked[*r.OrderID], r)
		}
	}
	var off int64
	for o := range f.m.Orders() {
		if !o.Row {
			continue
		}
		id := strconv.FormatInt(o.ID, 10)
		reqs := asked[o.ID]
		if o.AmountCents == nil || o.LineList == nil || len(reqs) == 0 || reqs[0].Lines == nil {
			return unknown(name, "order "+id+" has no amount, lines or client request on record")
		}
		var want, own int64
		for _, l := range reqs[0].Lines {
			p, ok := f.m.SeedPrice(l.SKU)
			if !ok {
				return unknown(name, "no seeded price of "+l.SKU)
			}
			want += l.Quantity * p
		}
		for _, l := range o.LineList {
			own += l.Quantity * *l.PriceCents
		}
		if *o.AmountCents != want || *o.AmountCents != own {
			off++
		}
	}
	return num(name, off)
}

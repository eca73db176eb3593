package spec

// The consumer beyond the ack boundary: several events per order over
// several partitions, database errors inside the effect transaction, and
// a restart after clean commits.
func init() {
	register(
		Scenario{
			ID: "orderLifecycle", Suite: SuiteEXT, Boundary: BoundaryNone,
			Description: "4 orders each go created → paid → shipped (aggregate_version 1, 2, 3; each later intent written in " +
				"the transaction that updates the order row) on a topic of 3 partitions keyed by order id; one relay round, " +
				"one consumer: each order's records share a partition and its effects follow its versions",
			Metrics: []Metric{{"orders", "4"}, {"intents", "12"}, {"partitions", ""}, {"splitOrders", "0"},
				{"outOfOrder", "0"}, {"effects", "12"}},
		},
	)
}

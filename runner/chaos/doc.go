// Package chaos is the chaos engine: it applies a nemesis schedule
// (runner/nemesis) to a pipeline under load, heals every fault, and waits
// for the pipeline to settle. It records every fault, heal, process start
// and process exit as an event of the nemesis actor.
//
// The engine drives processes, links and servers it did not necessarily
// start itself, through Targets: the roles' processes (started, restarted
// after they end, killed, paused and stopped by the engine's supervisor
// through a Launch function per slot), the proxied links between them and
// the database or the broker (Proxies), the broker (Broker) and the
// database (Database), and optionally an Aimer that stops a process at a
// place of its code path rather than at a random instant. The load and the
// test for quiescence are the Workload's. The reference pipeline's actors
// are one implementation of these (runner/chaosactors.go); a pipeline the
// tool did not write, started from a profile's commands, is another.
//
// It may import the plan (runner/nemesis), the fault points' names
// (runner/fault), the evidence and the spec, and the infrastructure
// (runner/infra: the embedded broker's faults), and of other modules the
// MariaDB driver and toxiproxy; never the runner itself, the reference
// actors (runner/actor, runner/internal/...) or the verifier
// (imports_test.go holds it to that).
package chaos

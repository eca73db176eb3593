// Package eventline decodes the lines of an actor's event log: fast,
// schema-exact, and sound. The verifier (package checks) decodes every
// line of every log through it: NewDecoder gives one decoder per worker of
// its evidence.Pool, and a line that is not a valid event comes back as a
// *Problem, which says whether the line breaks the event schema or is valid
// against it but not decodable.
//
// It may import evidence and schemas (and, in the jsonbench build only,
// the JSON libraries it is measured against); never checks, the runner or
// the system under test.
//
// The decoder (decoder.go), the schema-rule compiler (rules.go), the JSON
// scanner (scan.go), the date-time parser (time.go) and the table of
// evidence.Event's fields, derived from its struct tags (fields.go):
//
// Full JSON Schema validation of one event line with the generic validator
// costs about 165 µs (the 19 if/then branches of the event schema build an
// error tree for every line): 6,000 lines/s, far from the 200,000 events/s
// a million-event log needs. Decoding with encoding/json costs another
// 4 µs. So every line goes through a fast path first, and through the full
// validator only when the fast path cannot decide:
//
//   - The fast path's constraints are not written by hand: compileEventRules
//     derives them from the embedded schemas/event.schema.json (types,
//     minimum/maximum, minLength/maxLength, pattern, format date-time, enum,
//     const, items, maxItems, required, additionalProperties false, and the
//     allOf if-kind-then-required/oneOf rules). A keyword it does not know
//     disables the fast path altogether (every line then takes the full
//     validator), so the schema can grow without the fast path silently
//     accepting less strictly.
//   - It accepts only a subset of JSON whose meaning is unambiguous: one
//     flat object, keys without escapes and without duplicates, integers
//     without fraction or exponent that fit the Go field, strings that are
//     valid UTF-8 with simple escapes, date-times in the strict form
//     YYYY-MM-DDTHH:MM:SS[.fraction]Z. Anything else returns "undecided".
//   - It is sound by construction: it answers "valid" only when every
//     constraint holds; it never answers "invalid". An undecided line goes
//     to schemas.ValidateEventJSON (which reports every problem with its
//     location) and, if valid, evidence.DecodeEvent.
//
// FuzzFastEvent checks the property that matters: whenever the fast path
// accepts a line, the full validator accepts it too and evidence.DecodeEvent
// yields the identical Event.
package eventline

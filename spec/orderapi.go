package spec

// The request contract of POST /orders, which the generated load draws
// its inputs from and the verifier's reference model of the order service
// (checks/model, contract.go) predicts its answers by. The service has
// its own copies of these bounds (runner/internal/orders), held equal to
// these by its tests; neither side reads the other's.
//
// A request is judged in this order, the first refusal being its answer:
//
//  1. Authorization: "Bearer " (the scheme in any case, one space) and an
//     HS256 token of the policy of TokenAlg, TokenIssuer and TokenAudience,
//     whose subject (the principal) has 1..MaxPrincipalBytes bytes;
//     otherwise 401.
//  2. Idempotency-Key: exactly one value, either an RFC 8941 sf-string
//     (DQUOTE, printable ASCII with `"` and `\` escaped, DQUOTE; nothing
//     after it) or a bare key of visible ASCII without `"`, `\` and `,`;
//     the key it carries has 1..MaxKeyBytes bytes and is compared byte for
//     byte (case matters; `abc` and `"abc"` are one key); otherwise 400.
//  3. Body: at most MaxBodyBytes (413 over), one JSON object and nothing
//     after it, no unknown field; either sku and quantity (one line) or
//     lines (1..MaxLines lines of sku and quantity), not both; each SKU
//     1..MaxSKUBytes bytes of valid UTF-8, each quantity
//     1..MaxQuantity, no SKU on two lines; otherwise 400. Two bodies are
//     the same request when they decode to the same lines in the same
//     order: whitespace and the order of an object's keys do not count.
//  4. The key's record, per principal: the same request again gets the
//     stored answer (201, the same bytes, no write); another request
//     gets 422, no write.
//  5. The order: 404 when a SKU is not in stock's table, 409 when a line
//     finds less stock than its quantity, 500 when the amount (the sum of
//     quantity x seeded unit price) does not fit a signed 64-bit integer;
//     each without a write. Otherwise 201 and one order of exactly those
//     lines at the seeded prices. When several of these hold, any of
//     their answers may come (the service meets the lines in an order of
//     its choosing).
//
// 409 also answers a request whose key is in flight for the same
// principal; a request never waits on another principal's key.
const (
	MaxKeyBytes       = 255
	MaxPrincipalBytes = 128
	MaxLines          = 16
	MaxQuantity       = 1000
	MaxSKUBytes       = 64
	MaxBodyBytes      = 16 << 10
)

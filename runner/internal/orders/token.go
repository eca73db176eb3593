package orders

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// MinSecretBytes is the smallest HS256 key Validate accepts: RFC 7518
// section 3.2 requires a key at least as long as the hash output.
const MinSecretBytes = 32

// maxPrincipalBytes is the width of the principal columns.
const maxPrincipalBytes = 128

// errUnauthorized is the only error the token check returns to a client;
// the detail goes into the event's reason, never the token itself.
var errUnauthorized = errors.New("unauthorized")

// Claims returns the registered claims of a token this service accepts
// for subject until exp (a zero exp leaves the exp claim out): the issuer
// and audience of spec.TokenIssuer and spec.TokenAudience.
func Claims(subject string, exp time.Time) jwt.RegisteredClaims {
	c := jwt.RegisteredClaims{Subject: subject, Issuer: spec.TokenIssuer, Audience: jwt.ClaimStrings{spec.TokenAudience}}
	if !exp.IsZero() {
		c.ExpiresAt = jwt.NewNumericDate(exp)
	}
	return c
}

// SignToken returns an HS256 token for subject that expires at exp.
func SignToken(secret []byte, subject string, exp time.Time) (string, error) {
	return SignClaims(jwt.SigningMethodHS256, secret, Claims(subject, exp))
}

// SignTokenWith signs the claims of Claims(subject, exp) with any method
// and key, so that tests and scenarios can craft tokens the service must
// refuse: another secret (bad signature), jwt.SigningMethodHS512, or
// jwt.SigningMethodNone with jwt.UnsafeAllowNoneSignatureType.
func SignTokenWith(method jwt.SigningMethod, key any, subject string, exp time.Time) (string, error) {
	return SignClaims(method, key, Claims(subject, exp))
}

// SignClaims signs any claims with any method and key.
func SignClaims(method jwt.SigningMethod, key any, claims jwt.RegisteredClaims) (string, error) {
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token (%s): %w", method.Alg(), err)
	}
	return s, nil
}

// verifyToken checks an Authorization header value and returns the
// principal (the subject). It accepts HS256 only and requires exp, the
// configured issuer and audience, and nbf (when present) not in the
// future. The returned reason is safe to record: it never contains the
// token.
func (s *Service) verifyToken(header string) (principal, reason string) {
	const prefix = "Bearer "
	if header == "" {
		return "", "missing bearer token"
	}
	if len(header) <= len(prefix) || !equalFoldASCII(header[:len(prefix)], prefix) {
		return "", "authorization is not a bearer token"
	}
	raw := header[len(prefix):]
	claims := &jwt.RegisteredClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, s.tokenKey, s.parserOptions()...)
	if err == nil && s.cfg.Plant == plant.TokenNbfIgnored && (claims.ExpiresAt == nil || !s.cfg.Now().Before(claims.ExpiresAt.Time)) {
		err = jwt.ErrTokenExpired // the planted bug's own check: exp only
	}
	if err != nil {
		return "", "invalid token: " + tokenErrReason(err)
	}
	sub, err := tok.Claims.GetSubject()
	if err != nil || sub == "" {
		return "", "invalid token: no subject"
	}
	if len(sub) > maxPrincipalBytes {
		return "", "invalid token: subject longer than 128 bytes"
	}
	return sub, ""
}

// tokenKey is the key function: the HS256 secret (and, with the planted
// bug token-alg-none, no key at all for an unsigned token).
func (s *Service) tokenKey(t *jwt.Token) (any, error) {
	if s.cfg.Plant == plant.TokenAlgNone && t.Method == jwt.SigningMethodNone {
		return jwt.UnsafeAllowNoneSignatureType, nil
	}
	return s.cfg.Secret, nil
}

// parserOptions are the checks of verifyToken; a planted token bug
// leaves one out.
func (s *Service) parserOptions() []jwt.ParserOption {
	methods := []string{jwt.SigningMethodHS256.Alg()}
	if s.cfg.Plant == plant.TokenAlgNone {
		methods = append(methods, jwt.SigningMethodNone.Alg())
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(methods), jwt.WithTimeFunc(s.cfg.Now)}
	if s.cfg.Plant != plant.TokenNoExp {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	if s.cfg.Plant != plant.TokenIssUnchecked {
		opts = append(opts, jwt.WithIssuer(s.cfg.Issuer))
	}
	if s.cfg.Plant != plant.TokenAudUnchecked {
		opts = append(opts, jwt.WithAudience(s.cfg.Audience))
	}
	if s.cfg.Plant == plant.TokenNbfIgnored {
		opts = append(opts, jwt.WithoutClaimsValidation())
	}
	return opts
}

// tokenErrReason maps a jwt error to a short, token-free reason.
func tokenErrReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature or algorithm"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "unverifiable (algorithm not allowed)"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "required claim missing"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	default:
		return "rejected"
	}
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

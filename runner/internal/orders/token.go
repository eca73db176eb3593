package orders

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MinSecretBytes is the smallest HS256 key Validate accepts: RFC 7518
// section 3.2 requires a key at least as long as the hash output.
const MinSecretBytes = 32

// maxPrincipalBytes is the width of the principal columns.
const maxPrincipalBytes = 128

// errUnauthorized is the only error the token check returns to a client;
// the detail goes into the event's reason, never the token itself.
var errUnauthorized = errors.New("unauthorized")

// SignToken returns an HS256 token for subject that expires at exp.
func SignToken(secret []byte, subject string, exp time.Time) (string, error) {
	return SignTokenWith(jwt.SigningMethodHS256, secret, subject, exp)
}

// SignTokenWith signs a token with any method and key, so that tests and
// scenarios can craft tokens the service must refuse: another secret (bad
// signature), jwt.SigningMethodHS512, or jwt.SigningMethodNone with
// jwt.UnsafeAllowNoneSignatureType. A zero exp leaves the exp claim out.
func SignTokenWith(method jwt.SigningMethod, key any, subject string, exp time.Time) (string, error) {
	claims := jwt.RegisteredClaims{Subject: subject}
	if !exp.IsZero() {
		claims.ExpiresAt = jwt.NewNumericDate(exp)
	}
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token (%s): %w", method.Alg(), err)
	}
	return s, nil
}

// verifyToken checks an Authorization header value and returns the
// principal (the subject). It accepts HS256 only and requires exp. The
// returned reason is safe to record: it never contains the token.
func (s *Service) verifyToken(header string) (principal, reason string) {
	const prefix = "Bearer "
	if header == "" {
		return "", "missing bearer token"
	}
	if len(header) <= len(prefix) || !equalFoldASCII(header[:len(prefix)], prefix) {
		return "", "authorization is not a bearer token"
	}
	raw := header[len(prefix):]
	tok, err := jwt.ParseWithClaims(raw, &jwt.RegisteredClaims{},
		func(*jwt.Token) (any, error) { return s.cfg.Secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.cfg.Now),
	)
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

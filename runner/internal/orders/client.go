package orders

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client places orders over HTTP, for scenarios and tests.
type Client struct {
	// BaseURL is the service root, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// HTTP is the client used; nil means http.DefaultClient.
	HTTP *http.Client
}

// Result is one answer of the service.
type Result struct {
	Status int
	// Body is the raw answer, byte for byte (a replay returns the stored
	// bytes).
	Body []byte
	// Order is the decoded body of a 201, nil otherwise.
	Order *PlaceResponse
	// Error is the "error" field of a non-2xx answer.
	Error string
}

// Place posts req with a bearer token and an Idempotency-Key. An empty
// token or key leaves that header out. err reports a transport failure or
// an undecodable answer, never a non-2xx status.
func (c *Client) Place(ctx context.Context, token, key string, req PlaceRequest) (Result, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Result{}, fmt.Errorf("encode order request: %w", err)
	}
	return c.PlaceRaw(ctx, token, key, body)
}

// PlaceRaw posts body as it is (for malformed requests in tests).
func (c *Client) PlaceRaw(ctx context.Context, token, key string, body []byte) (Result, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("place order: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		sf, ok := formatSFString(key)
		if !ok {
			return Result{}, fmt.Errorf("place order: idempotency key %q is not printable ASCII", key)
		}
		hreq.Header.Set(HeaderIdempotencyKey, sf)
	}
	return c.do(hreq)
}

// PlaceHeaders posts body with the Authorization header auth (none when
// empty) and the Idempotency-Key values keys as they are, unencoded (for
// the generated load, which sends malformed headers on purpose).
func (c *Client) PlaceHeaders(ctx context.Context, auth string, keys []string, body []byte) (Result, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("place order: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if auth != "" {
		hreq.Header.Set("Authorization", auth)
	}
	for _, k := range keys {
		hreq.Header.Add(HeaderIdempotencyKey, k)
	}
	return c.do(hreq)
}

func (c *Client) do(hreq *http.Request) (Result, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return Result{}, fmt.Errorf("place order: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Result{Status: resp.StatusCode}, fmt.Errorf("place order: read answer: %w", err)
	}
	res := Result{Status: resp.StatusCode, Body: raw}
	if resp.StatusCode == http.StatusCreated {
		var o PlaceResponse
		if err := json.Unmarshal(raw, &o); err != nil {
			return res, fmt.Errorf("place order: decode answer: %w", err)
		}
		res.Order = &o
		return res, nil
	}
	var e ErrorResponse
	if err := json.Unmarshal(raw, &e); err != nil {
		return res, fmt.Errorf("place order: decode error answer (status %d): %w", resp.StatusCode, err)
	}
	res.Error = e.Error
	return res, nil
}

// formatSFString encodes key as an sf-string, or reports false when key has
// a character an sf-string cannot carry (the client's side of
// parseSFString).
func formatSFString(key string) (string, bool) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c >= 0x7f {
			return "", false
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), true
}

package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckMessagesUpstream: a Messages upstream is asked GET /v1/models
// with the key as x-api-key; a refused key is an error naming it.
func TestCheckMessagesUpstream(t *testing.T) {
	var path, key, bearer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, key, bearer = r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")
		if key != "sk-good" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	if err := CheckMessagesUpstream(context.Background(), srv.URL+"/", "sk-good"); err != nil || path != "/v1/models" || bearer != "" {
		t.Errorf("good key: %v, asked %s (bearer %q)", err, path, bearer)
	}
	if err := CheckMessagesUpstream(context.Background(), srv.URL, "sk-bad"); err == nil || !strings.Contains(err.Error(), "refused the key") {
		t.Errorf("bad key: %v", err)
	}
	if err := CheckUpstream(context.Background(), srv.URL+"/v1", "sk-good"); err == nil || bearer != "Bearer sk-good" || key != "" {
		t.Errorf("chat upstream: %v, bearer %q x-api-key %q", err, bearer, key)
	}
}

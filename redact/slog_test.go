package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("key", "password="+githubPAT)
	log.Warn("upstream said "+openaiLegacy,
		"err", fmt.Errorf("dial: %w", errors.New("postgres://u:hunter2@db")),
		"session", "s1",
		slog.Group("req", "auth", "Bearer "+jwtToken),
		"raw", []byte(anthropicKey))
	out := buf.String()
	for _, secret := range []string{githubPAT, openaiLegacy, "hunter2", jwtToken, anthropicKey} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"session=s1", "[redacted:openai-key]", "[redacted:url-password]", "req.auth="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

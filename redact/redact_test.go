package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Shapes of real credentials (random bodies of the real lengths and
// alphabets; none is a live key).
const (
	openaiLegacy = "sk-4hR2x9QpLm7TzW1vKc8NfB3yJd6GsE0aUoPiXqVr5tHnMk2L"
	openaiProj   = "sk-proj-Zk3vQ9xR2mL7pT1wN8cB4yH6dJ0fG5sA_aUoPiXqVr5tHnMk2Lw-7Eyx9QpLm7TzW1vKc8NfB3yJd6GsE0aUoPiXqVr5tHnMk2LZk3vQ9xR2mL7pT1wN8cB4yH6dJ0fG5sA"
	anthropicKey = "sk-ant-api03-Qm9xR2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5tHnMk2LZk3vQ9xR2mL7pT1wN8cB4yH6dJ0fG5sAaUoPiXq-Vr5tHnMk2LQAA"
	githubPAT    = "ghp_R2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5t"
	githubOAuth  = "gho_16C7e42F292c6912E7710c838347Ae178B4a"
	githubFine   = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"
	gitlabPAT    = "glpat-xR2vL7pT1wN8cB4yH6dJ"
	slackBot     = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	npmToken     = "npm_R2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5t"
	awsKeyIDs    = "AKIAIOSFODNN7EXAMPLE"
	awsSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	jwtToken     = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemKey       = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9OiZ1BjP5CE/Wm/Rr500P\nRK+Lh9x5eJPo5CAZ3/ANBE0sTK0ZsDGMak2m1g7\n-----END RSA PRIVATE KEY-----"
	opensshKey   = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDZ2W8X6s0rQ4d3g\n-----END OPENSSH PRIVATE KEY-----"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"openai legacy", "export OPENAI_API_KEY=" + openaiLegacy, "export OPENAI_API_KEY=[redacted:secret]"},
		{"openai bare", "my key is " + openaiLegacy + ", use it", "my key is [redacted:openai-key], use it"},
		{"openai project", "key: `" + openaiProj + "`", "key: `[redacted:openai-key]`"},
		{"anthropic", "ANTHROPIC=" + anthropicKey + "\n", "ANTHROPIC=[redacted:anthropic-key]\n"},
		{"github classic", "git clone https://" + githubPAT + "@github.com/o/r", "git clone https://[redacted:github-token]@github.com/o/r"},
		{"github oauth", "token " + githubOAuth, "token [redacted:github-token]"},
		{"github fine-grained", "GH_TOKEN=" + githubFine + " gh pr list", "GH_TOKEN=[redacted:github-token] gh pr list"},
		{"gitlab", "glab auth login --token " + gitlabPAT, "glab auth login --token [redacted:gitlab-token]"},
		{"slack", "SLACK_BOT_TOKEN: " + slackBot, "SLACK_BOT_TOKEN: [redacted:slack-token]"},
		{"npm", "//registry.npmjs.org/:_authToken=" + npmToken, "//registry.npmjs.org/:_authToken=[redacted:npm-token]"},
		{"aws key id", "aws_access_key_id = " + awsKeyIDs, "aws_access_key_id = [redacted:aws-access-key]"},
		{"aws secret ini", "aws_secret_access_key = " + awsSecretKey, "aws_secret_access_key = [redacted:secret]"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecretKey + " aws s3 ls", "AWS_SECRET_ACCESS_KEY=[redacted:secret] aws s3 ls"},
		{"aws secret json", `{"AccessKeyId": "` + awsKeyIDs + `", "SecretAccessKey": "` + awsSecretKey + `"}`, `{"AccessKeyId": "[redacted:aws-access-key]", "SecretAccessKey": "[redacted:secret]"}`},
		{"jwt", "cookie: session=" + jwtToken + ";", "cookie: session=[redacted:jwt];"},
		{"curl bearer", `curl -H 'Authorization: Bearer ` + openaiLegacy + `' https://api.openai.com/v1/models`, `curl -H 'Authorization: Bearer [redacted:bearer]' https://api.openai.com/v1/models`},
		{"curl bearer opaque", `curl -H "Authorization: Bearer abc.def-ghi_jkl" x`, `curl -H "Authorization: Bearer [redacted:bearer]" x`},
		{"basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [redacted:basic]"},
		{"header other scheme", "authorization: token " + githubPAT, "authorization: token [redacted:authorization]"},
		{"bare bearer", "use Bearer a1b2c3d4e5f6g7h8i9j0 here", "use Bearer [redacted:bearer] here"},
		{"pem", "key:\n" + pemKey + "\nend", "key:\n[redacted:private-key]\nend"},
		{"openssh", opensshKey, "[redacted:private-key]"},
		{"pem cut short", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "[redacted:private-key]"},
		{"password=", "mysql --password=hunter2 -u root", "mysql --password=[redacted:password] -u root"},
		{"passwd:", "passwd: s3cr3t!", "passwd: [redacted:password]"},
		{"DB_PASSWORD", "DB_PASSWORD='correct horse' ./run", "DB_PASSWORD='[redacted:password]' ./run"},
		{"secret=", "client_secret=abc123&grant_type=x", "client_secret=[redacted:secret]&grant_type=x"},
		{"yaml password", "  password: \"p@ss:w0rd\"\n", "  password: \"[redacted:password]\"\n"},
		{"url password", "postgres://admin:Pa55w0rd@db.internal:5432/app", "postgres://admin:[redacted:url-password]@db.internal:5432/app"},
		{"url token user", "https://x-access-token:" + githubPAT + "@github.com/o/r.git", "https://x-access-token:[redacted:url-password]@github.com/o/r.git"},
		{"api key header", "x-api-key: " + anthropicKey, "x-api-key: [redacted:secret]"},

		// Left alone.
		{"prose", "the password is required and the secret sauce is tests", "the password is required and the secret sauce is tests"},
		{"task id", "task-abcdefghijklmnopqrstuvwxyz0123", "task-abcdefghijklmnopqrstuvwxyz0123"},
		{"sk- words", "risk-assessment-of-the-whole-thing", "risk-assessment-of-the-whole-thing"},
		{"sk- no digit", "sk-this-is-not-a-key-at-all-really", "sk-this-is-not-a-key-at-all-really"},
		{"bearer prose", "Bearer authentication is described", "Bearer authentication is described"},
		{"env reference", "password=$DB_PASSWORD", "password=$DB_PASSWORD"},
		{"url without password", "ssh://git@github.com/o/r and http://localhost:8080/x", "ssh://git@github.com/o/r and http://localhost:8080/x"},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----"},
		{"AKIA in word", "XAKIAIOSFODNN7EXAMPLE", "XAKIAIOSFODNN7EXAMPLE"},
		{"yaml list", "secrets:\n  - name: x", "secrets:\n  - name: x"},
		{"go field", "Password string", "Password string"},
		{"authorization prose", "Add authorization: admins can delete posts", "Add authorization: admins can delete posts"},
		{"authorization scheme prose", "authorization: basic auth for the admin", "authorization: basic auth for the admin"},
		{"password prose", "Reset the password: users get an email", "Reset the password: users get an email"},
		{"yaml password word", "password: hunter2", "password: [redacted:password]"},
		{"ts type", "secret: string;", "secret: string;"},
		{"password= word", "password=correcthorse", "password=[redacted:password]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if got := String(tc.want); got != tc.want {
				t.Errorf("not idempotent: String(%q) = %q", tc.want, got)
			}
		})
	}
}

// TestJSON checks that secrets in JSON-encoded text (how the store holds
// them) are found, and that the result is still valid JSON decoding to the
// redacted text.
func TestJSON(t *testing.T) {
	texts := []string{
		"run:\n" + openaiProj + "\n",
		"line\n" + githubPAT,
		"<" + slackBot + ">",
		"key:\n" + pemKey + "\nthanks",
		`{"password": "hunter2", "token": "` + npmToken + `"}`,
		"curl -H \"Authorization: Bearer " + jwtToken + "\" https://x",
		"tab\t" + awsKeyIDs,
	}
	for _, text := range texts {
		raw, _ := json.Marshal(map[string]string{"text": text})
		out := Bytes(raw)
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("redacted JSON of %q does not decode: %v\n%s", text, err, out)
		}
		if got["text"] != String(text) {
			t.Errorf("JSON text %q\n got %q\nwant %q", text, got["text"], String(text))
		}
		if !strings.Contains(got["text"], "[redacted:") {
			t.Errorf("nothing redacted in %q", text)
		}
	}
}

func TestBytesNoCopy(t *testing.T) {
	b := []byte("nothing to see here: sk-short and password")
	if out := Bytes(b); &out[0] != &b[0] {
		t.Error("Bytes copied a clean input")
	}
	if out := Bytes([]byte(githubPAT)); string(out) != "[redacted:github-token]" {
		t.Errorf("Bytes = %q", out)
	}
}

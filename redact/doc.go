// Package redact replaces token-shaped secrets in text with a marker
// "[redacted:KIND]", so that what rcm stores, logs and serves never holds
// an API key a user pasted into a prompt or a command.
//
// It finds, in one linear pass with a cheap first-byte test at each
// position:
//   - provider tokens by their prefix: OpenAI (sk-, sk-proj-), Anthropic
//     (sk-ant-), GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
//     (glpat-), Slack (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-), npm (npm_), AWS
//     access key ids (AKIA, ASIA) and JWTs (eyJ...eyJ...);
//   - credentials by their context: the value after Authorization (Bearer,
//     Basic or any scheme), a long token after a bare "Bearer", the value
//     after password, passwd, secret (so also aws_secret_access_key and
//     SecretAccessKey), api_key, api-key, apikey, access_token, auth_token
//     and refresh_token followed by = or :, the password of a URL's
//     user:pass@, and private-key PEM blocks, whole.
//
// Text that is JSON-encoded (a stored value) is handled too: no match
// spans a quote or a backslash except inside a PEM block, so a redacted
// JSON value stays valid, and an escape such as \n before a token counts
// as the separator it encodes.
//
// Redacted text reaches the model (the task records rcm forwards), so
// prose is spared: after a colon, an unquoted value counts only when it is
// shaped like a credential (a digit, a symbol or both cases), so "Add
// authorization: admins can delete posts" stays as it is, while after = or
// in quotes any value counts.
//
// Caveats: it is a pattern matcher, not a secret scanner with entropy
// checks. It errs on the side of redacting where the context says secret
// (password=correcthorse goes), and it misses secrets with no recognisable
// shape or context (a bare password in prose, "password: correcthorse").
// A value that refers to the environment ($VAR) is kept. The output is a
// fixed point: redacting it again changes nothing.
package redact

package compaction

// bytesPerToken is the usual ratio of English text and JSON to BPE tokens;
// rcm needs consistent estimates for budgets and reports, not exact counts.
const bytesPerToken = 4

// Estimate returns the estimated token count of n bytes of model input.
func Estimate(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

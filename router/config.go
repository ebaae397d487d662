package router

import (
	"errors"
	"fmt"
	"time"

	"github.com/rcm-dev/rcm/internal/str"
)

// DefaultThreshold is the confidence below which the full history is kept.
const DefaultThreshold = 0.8

// DefaultTimeout bounds one call of the model classifier.
const DefaultTimeout = 5 * time.Second

// Config configures a Router. The zero value routes with the cheap signals
// only, at DefaultThreshold.
type Config struct {
	// Threshold in (0, 1]: decisions below it fall back to the full
	// history. 0 means DefaultThreshold.
	Threshold float64
	// Model names the optional LLM classifier asked when the cheap signals
	// are not confident; "" disables it.
	Model string
	// BaseURL of the classifier's OpenAI-compatible API ("" means
	// https://api.openai.com/v1) and its key ("" sends none).
	BaseURL, APIKey string
	// Timeout of one classifier call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Coefficients replace the fitted ones (the fit tries its own); nil
	// means the fitted defaults.
	Coefficients *Coefficients
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if c.Threshold < 0 || c.Threshold > 1 || c.Threshold != c.Threshold {
		return fmt.Errorf("router: threshold %v outside [0, 1]", c.Threshold)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("router: negative timeout %v", c.Timeout)
	}
	if c.BaseURL != "" {
		if err := str.HTTPURL(c.BaseURL); err != nil {
			return fmt.Errorf("router: base URL %q: %w", c.BaseURL, err)
		}
	}
	if c.Model == "" && (c.BaseURL != "" || c.APIKey != "") {
		return errors.New("router: classifier base URL or key set without a model")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

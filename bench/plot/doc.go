// Package plot draws the bench's SVG charts: bars with intervals, lines
// over thresholds, axes and legends, one color per rcm mode. It writes SVG
// text directly, with no dependency.
package plot

// Package stat holds the bench's numbers: Num (a metric that may be NaN,
// written to JSON as null), means with 95% Student t-intervals, percentiles,
// and how the markdown tables print them.
//
// Caveats: t quantiles come from a table to three decimals; past its 30
// degrees of freedom the next smaller tabulated one is taken (a slightly
// wider interval).
package stat

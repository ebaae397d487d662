// Package fit fits the router's scored model (router/coef_gen.go) on
// labelled sessions and measures it: `rcm bench fit`.
//
// A Session is a labelled conversation laid out as a harness sends it:
// Real ones come from people's logs (bench/chatlog, with their hand
// labels), synthetic ones from the bench's Switch-SWE sessions in the
// shared layout (every request opens, continues or returns to its task,
// and needs only its own). Simulate replays one through router.Route as the
// proxy would, labels stored by turn fingerprint and a routed label kept,
// and scores every candidate the model weighed at each call (Row): safe
// when routing there names the request's own task and keeps every earlier
// request of the tasks it needs. Fit runs a teacher-forced round (every
// earlier turn labelled with its gold task, so that returns and other
// tasks' turns appear) and then rounds replaying its own previous fit,
// and fits each head by L2-penalised logistic regression on all rows so
// far. CrossValidate measures every session with coefficients fitted
// without its fold of whole repositories, and returns each fold's
// coefficients (`rcm bench fit` replays each real session through a proxy
// with them, in router and rcm mode); Summarize and Report give the
// issue's measures (needed context lost, continue split off, returns, new
// tasks, unneeded bytes dropped, calibration) in router mode's forwarded
// turns, and the ceiling of the drop: the share of the earlier requests'
// bytes that the hand labels say a call does not need. Ceilings weighs,
// from the labels alone, a softer split than a new task's (one that keeps
// the task it opened after), which the router does not make.
//
// Caveats: a synthetic turn's calls are sampled (Session.Sampled); the
// measures count router mode's kept turns, not rcm mode's record message;
// the fit takes minutes (it replays every session once a round and a fold).
package fit

// Package chattest builds OpenAI chat-completions bodies for the tests of
// every package that reads them, from chat.Message values (the same types
// the bench importers produce), and locates the shared data set of real
// trajectories beside the repository.
package chattest

// Package natsbus carries toolstream's events over NATS.
//
// [Open] connects a [Bus]: to the NATS server or cluster given with
// [WithURL] (or the TOOLSTREAM_NATS_URL environment variable), or to a NATS
// server embedded in the process, with JetStream on and its store in a
// private temporary folder. The bus's [Publisher] is an inline observer:
// attach it to a toolkit and every call's events go to
// <prefix>.<session>.<call>.<type>:
//
//	bus, err := natsbus.Open(ctx)
//	...
//	defer bus.Close(ctx)
//	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
//
// With [WithDurable] a JetStream stream keeps the events, de-duplicated by
// message id, so that [Bus.Replay] and the Server-Sent Events bridge
// ([Bus.SSEHandler]) can resume a session from any point. [Bus.Subscribe]
// follows events live.
//
// The envelope, the subject rule and the codec are in package events, which
// does not depend on NATS; docs/events.md is the protocol for clients in
// other languages.
package natsbus

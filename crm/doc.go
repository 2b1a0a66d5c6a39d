// Package crm is the receiver side of the handoff over HTTP: Server puts
// a system.CRM behind POST /tasks with an Idempotency-Key header, and
// Sender is the system.Receiver that delivers to such a server. Both follow
// the spec's part "The HTTP receiver and sender": the IETF draft "The
// Idempotency-Key HTTP Header Field" where it speaks, Stripe's documented
// behaviour where it is silent. Package crm/contract runs that contract,
// clause by clause, against any endpoint that claims to keep it.
package crm

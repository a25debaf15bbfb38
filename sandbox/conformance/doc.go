// Package conformance is the contract every sandbox runtime must keep,
// checked with plain shell jobs (no Python, no engine): each promise of
// sandbox.Runtime and sandbox.Session (Contract), and what a runtime
// leaves on the host (Leftovers). The scan-level suites (hostile
// fixtures, posture, integrity) run the engine and live in
// engine/scansuite. It is for tests only, and imports only sandbox.
package conformance

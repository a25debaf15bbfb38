// Package report is what a scan found, as data and as text: the report's
// types (stable JSON field names that CI systems parse), its renderers
// (text, JSON, SARIF 2.1.0, GitHub workflow commands, JUnit, one HTML
// page), baselines, suppressions, Merge of a split scan's parts, and
// Validate for a report read from elsewhere. The engine fills a report
// in; the command line, merge and replay read one without the engine.
//
// It runs nothing. It imports what it carries as those packages declare
// it: sandbox's condition table (a run's conditions, RunConditions, and
// the declarations that name, show and order them, so every renderer shows
// a condition as the table does), sandbox.Support (a condition a runtime
// could not vary, and why) and gate.Smell (what the linter saw in a
// function's body); it knows nothing else of sandboxes or Python. Every
// field it renders may come from an untrusted report: renderers escape
// what they print (TerminalSafe, the github and XML escapers).
package report

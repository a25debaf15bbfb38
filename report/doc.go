// Package report is what a scan found, as data and as text: the report's
// types (stable JSON field names that CI systems parse) and its renderers
// (text for people, JSON, SARIF 2.1.0 for code scanning). The engine fills
// a report in; the command line and replay read one without the engine.
// It runs nothing and knows nothing of sandboxes or Python.
package report

// Package jinja owns rendering chat templates: a lexer, parser and
// evaluator for the subset of Jinja2 that models' chat templates use
// (tokenizer.chat_template in GGUF files, tokenizer_config.json on the
// hub), with the settings transformers' apply_chat_template uses
// (trim_blocks, lstrip_blocks, loop controls, tojson without HTML
// escaping, raise_exception and strftime_now), and ChatML as the fallback
// for models without a usable template.
//
// Templates come from model files, so they are untrusted input: parsing
// never panics, nesting is bounded, and rendering runs under Limits (steps,
// macro depth, output and value size) so a hostile template cannot hang
// or exhaust memory.
//
// It is a leaf: it imports only the standard library, and must not import
// the engine, the server, the tokenizer or anything that does I/O.
package jinja

// Ledger text into HTML and Markdown, shared by report.html / report.md and the history pages:
// whatever a test id, reason or command holds, it is shown as text and never read as markup.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace evgate {

// Appends `text` with & < > " ' escaped.
void escape_html(std::string& out, std::string_view text);
// <tag class=css>escaped text</tag>; `css` is always ours, never the ledger's.
void html_element(std::string& out, std::string_view tag, std::string_view text, std::string_view css = {});

constexpr std::size_t kMarkdownCell = 300;  // bytes of one table cell's text

// At most `limit` bytes, cut on a UTF-8 character boundary (an ellipsis marks the cut).
std::string clip(std::string_view text, std::size_t limit);
// Plain text in a table cell, clipped to kMarkdownCell: every character Markdown (or GitHub's
// math) could read as markup is backslash-escaped; a line break would end the table row.
std::string md_text(std::string_view text);
// A code span that holds any text: a fence longer than any backtick run inside, `|` escaped
// (GitHub splits table cells on it even in code), line breaks as spaces.
std::string md_code(std::string_view text);

}  // namespace evgate

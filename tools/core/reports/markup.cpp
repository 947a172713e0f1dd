#include "reports/markup.hpp"

#include <algorithm>

namespace evgate {

void escape_html(std::string& out, std::string_view text) {
    for (std::size_t start = 0; start < text.size();) {
        const auto special = std::min(text.find_first_of("&<>\"'", start), text.size());
        out.append(text, start, special - start);  // the plain run up to it, at once
        if (special == text.size()) break;
        switch (text[special]) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += "&#39;";
        }
        start = special + 1;
    }
}

void html_element(std::string& out, std::string_view tag, std::string_view text, std::string_view css) {
    out.append("<").append(tag);
    if (!css.empty()) out.append(" class=\"").append(css).append("\"");
    out += '>';
    escape_html(out, text);
    out.append("</").append(tag).append(">");
}

std::string clip(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) return std::string(text);
    while (limit > 0 && (static_cast<unsigned char>(text[limit]) & 0xC0) == 0x80) --limit;
    return std::string(text.substr(0, limit)) + "\xE2\x80\xA6";
}

std::string md_text(std::string_view text) {
    std::string out;
    for (const char c : clip(text, kMarkdownCell)) {
        if (c == '\n' || c == '\r') {
            out += ' ';
            continue;
        }
        if (std::string_view("\\`*_[]<>|&~$#!").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

std::string md_code(std::string_view text) {
    std::string body;
    std::size_t run = 0, longest = 0;
    for (const char c : text) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
        if (c == '\n' || c == '\r')
            body += ' ';
        else if (c == '|')
            body += "\\|";
        else
            body += c;
    }
    if (body.empty()) return {};
    const std::string fence(longest + 1, '`');
    const bool pad = body.front() == '`' || body.back() == '`';
    return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

}  // namespace evgate

// The pages' CSS and script, as files in reports/assets/ compiled in by embed.cmake (a raw
// string literal each): every page is self-contained, and no asset is read at run time.
#pragma once

#include <string_view>

namespace evgate::assets {

extern const std::string_view report_css;   // assets/report.css: report.html's <style>
extern const std::string_view report_js;    // assets/report.js: report.html's <script>; OUTCOMES is a slot
extern const std::string_view history_css;  // assets/history.css: history.html's <style>

}  // namespace evgate::assets

#include "inputs/run_id.hpp"

#include <array>
#include <limits>
#include <ostream>
#include <utility>

#include "io/error.hpp"

namespace evgate {
namespace {

constexpr std::array<std::pair<RunId::Kind, std::string_view>, 7> kKinds{{
    {RunId::Kind::seed, "seed"},
    {RunId::Kind::first, "first"},
    {RunId::Kind::alone, "alone"},
    {RunId::Kind::sweep, "sweep"},
    {RunId::Kind::perturbed, "perturbed"},
    {RunId::Kind::probe, "probe"},
    {RunId::Kind::replay, "replay"},
}};

constexpr std::array<std::pair<RunId::Step, std::string_view>, 3> kSteps{{
    {RunId::Step::rerun, "rerun"},
    {RunId::Step::apart, "apart"},
    {RunId::Step::fresh, "fresh"},
}};

bool numbered(RunId::Kind kind) { return kind != RunId::Kind::perturbed && kind != RunId::Kind::probe && kind != RunId::Kind::replay; }
bool numbered(RunId::Step step) { return step != RunId::Step::apart; }

// The next dot-separated word of `text` from `at`, moving `at` past it and its dot.
std::string_view next_word(std::string_view text, std::size_t& at) {
    const auto dot = text.find('.', at);
    const auto end = dot == std::string_view::npos ? text.size() : dot;
    const auto word = text.substr(at, end - at);
    at = dot == std::string_view::npos ? text.size() + 1 : dot + 1;
    return word;
}

// Digits only, no sign, no leading zero (so that str() spells it back), no overflow.
std::optional<std::uint64_t> number_of(std::string_view word) {
    if (word.empty() || (word.size() > 1 && word[0] == '0')) return std::nullopt;
    std::uint64_t n = 0;
    for (const char c : word) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (n > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        n = n * 10 + digit;
    }
    return n;
}

template <typename T, std::size_t N>
std::optional<T> named(const std::array<std::pair<T, std::string_view>, N>& table, std::string_view word) {
    for (const auto& [value, name] : table)
        if (name == word) return value;
    return std::nullopt;
}

template <typename T, std::size_t N>
std::string_view name_of(const std::array<std::pair<T, std::string_view>, N>& table, T value) {
    for (const auto& [v, name] : table)
        if (v == value) return name;
    return {};
}

}  // namespace

std::optional<RunId> RunId::parse(std::string_view text) {
    std::size_t at = 0;
    const auto kind = named(kKinds, next_word(text, at));
    if (!kind) return std::nullopt;
    std::uint64_t number = 0;
    if (numbered(*kind)) {
        if (at > text.size()) return std::nullopt;
        const auto n = number_of(next_word(text, at));
        if (!n) return std::nullopt;
        number = *n;
    }
    RunId id(*kind, number);
    while (at <= text.size()) {
        const auto step = named(kSteps, next_word(text, at));
        if (!step) return std::nullopt;
        Suffix suffix{*step, 0};
        if (numbered(*step)) {
            if (at > text.size()) return std::nullopt;
            const auto n = number_of(next_word(text, at));
            if (!n) return std::nullopt;
            suffix.number = *n;
        }
        id.suffixes_.push_back(suffix);
    }
    return id;
}

std::optional<RunId> RunId::parse_any(std::string_view text) {
    const auto colon = text.rfind(':');  // a runner's name may hold one; an id of this machine never does
    if (colon == std::string_view::npos) return parse(text);
    auto id = parse(text.substr(colon + 1));
    if (!id || colon == 0) return std::nullopt;
    id->runner_ = std::string(text.substr(0, colon));
    return id;
}

RunId RunId::runner_run(std::string runner) {
    RunId id;
    id.runner_ = std::move(runner);
    return id;
}

RunId RunId::on(const std::string& runner) const {
    RunId id = *this;
    id.runner_ = runner_.empty() ? runner : runner + ":" + runner_;
    return id;
}

std::optional<RunId> RunId::local() const {
    if (!runner_.empty() || kind_ == Kind::none) return std::nullopt;
    return *this;
}

RunId RunId::of(std::string_view text) {
    if (auto id = parse(text)) return *id;
    throw Error("not a run id: " + quote(std::string(text)));
}

std::string RunId::str() const {
    if (kind_ == Kind::none) return runner_;
    std::string text = runner_.empty() ? std::string() : runner_ + ":";
    text += name_of(kKinds, kind_);
    if (numbered(kind_)) text += "." + std::to_string(number_);
    for (const auto& suffix : suffixes_) {
        text += ".";
        text += name_of(kSteps, suffix.step);
        if (numbered(suffix.step)) text += "." + std::to_string(suffix.number);
    }
    return text;
}

RunId RunId::base() const {
    RunId id = *this;
    id.suffixes_.clear();
    return id;
}

bool RunId::has(Step step) const {
    for (const auto& suffix : suffixes_)
        if (suffix.step == step) return true;
    return false;
}

std::optional<RunId> RunId::before_last(Step step) const {
    for (auto k = suffixes_.size(); k > 0; --k) {
        if (suffixes_[k - 1].step != step) continue;
        RunId id = *this;
        id.suffixes_.resize(k - 1);
        return id;
    }
    return std::nullopt;
}

RunId RunId::with(Suffix suffix) const {
    RunId id = *this;
    id.suffixes_.push_back(suffix);
    return id;
}

std::ostream& operator<<(std::ostream& out, const RunId& id) { return out << id.str(); }

}  // namespace evgate
